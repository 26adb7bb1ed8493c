/**
 * A file rule as loaded: its {@link PolicyRuleInfo} and the core rule made of it. One instance per rule
 * of a file (10,000 in a large one), so the position is a getter on the class's prototype rather than an
 * own accessor: an object literal with its own getter costs several times a plain instance to build.
 */
import type { PermissionRule } from '../permissions/rule.js';
import type { PermissionResult } from '../permissions/result.js';
import type { Tool } from '../tool.js';
import { runTests, type ConditionTest, type Glob } from './matchers.js';
import type { PolicyRuleInfo } from './policy-set.js';
import type { PolicyPosition, PolicyRuleData } from './types.js';

/** Where the positions come from: the load's locator, asked only when a position is read. */
interface PositionSource {
  at(path: readonly (string | number)[]): PolicyPosition;
}

/** The frozen empty list shared by rules with no globs, no conditions or no exact names. */
export const NONE: readonly never[] = Object.freeze([]);

/** A loaded rule (frozen); `position` is read on demand: it costs the positioned Document a clean load does not build. */
export class FileRuleInfo implements PolicyRuleInfo {
  readonly name: string;
  readonly index: number;
  readonly result: PermissionResult;
  readonly reason: string | null;
  readonly exact: readonly string[];
  readonly globs: readonly Glob[];
  readonly namespace: string | null;
  readonly tags: readonly string[] | null;
  readonly tests: readonly ConditionTest[];
  readonly data: PolicyRuleData;
  readonly #positions: PositionSource;

  constructor(
    data: PolicyRuleData,
    index: number,
    parts: {
      readonly exact: readonly string[];
      readonly globs: readonly Glob[];
      readonly namespace: string | null;
      readonly tests: readonly ConditionTest[];
    },
    positions: PositionSource,
  ) {
    this.name = data.name;
    this.index = index;
    this.result = data.result;
    this.reason = data.reason ?? null;
    this.exact = parts.exact;
    this.globs = parts.globs;
    this.namespace = parts.namespace;
    this.tags = data.tags ? Object.freeze([...data.tags]) : null;
    this.tests = parts.tests;
    this.data = data;
    this.#positions = positions;
    Object.freeze(this);
  }

  get position(): PolicyPosition {
    return this.#positions.at(['rules', this.index]);
  }
}
// The prototype every rule of every loaded file shares is frozen as its instances are: a `position`
// redefined there (or a field added) would change where lint and explain place every rule, past and future.
Object.freeze(FileRuleInfo.prototype);
Object.freeze(FileRuleInfo);

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The core rule for a file rule. Exact names use the core's name index; tags its tag index; globs and
 * namespaces a `select` predicate the core asks once per tool and keeps with that tool's candidate list.
 */
export function toPermissionRule(info: PolicyRuleInfo): PermissionRule {
  const { exact, globs, namespace, tags, tests } = info;
  const useIndex = globs.length === 0 && exact.length > 0;
  // Only a `select` reads the set: a rule of exact names alone goes to the core's name index.
  const exactSet = globs.length > 0 || namespace !== null ? new Set(exact) : null;
  // Fields are set in the order the rule always had (name, result, reason, tools, tags, select, match).
  const rule: Mutable<PermissionRule> = { name: info.name, result: info.result };
  if (info.reason !== null) rule.reason = info.reason;
  if (useIndex) rule.tools = exact;
  if (tags) rule.tags = tags;
  if (exactSet !== null)
    rule.select = (tool: Tool): boolean => {
      if (namespace !== null && tool.namespace !== namespace) return false;
      if (globs.length === 0 && exact.length === 0) return true;
      return exactSet.has(tool.canonicalName) || globs.some((g) => g.test(tool.canonicalName));
    };
  if (tests.length > 0)
    rule.match = (_tool: Tool, params: Readonly<Record<string, unknown>>): boolean => {
      const verdict = runTests(tests, params);
      if (typeof verdict === 'string') throw new Error(`${verdict}; the call cannot be judged safely`);
      return verdict;
    };
  else if (!useIndex && !tags && exactSet === null) rule.match = () => true;
  return rule;
}
