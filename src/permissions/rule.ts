import { ConfigurationError } from '../errors.js';
import { canonical, describe } from '../names.js';
import type { Tool } from '../tool.js';
import { isPermissionResult, type PermissionResult } from './result.js';

/**
 * One rule: a predicate over the tool and its validated arguments, and the result when it matches.
 * Plain objects work. The optional `tools` and `tags` selectors say which tools the rule can match at
 * all, so evaluation skips it for every other tool without calling `match`; with a selector, `match`
 * may be left out and the rule matches whatever the selector selects.
 *
 * @example
 * const noBigRefunds: PermissionRule = {
 *   name: 'ask_big_refunds',
 *   tools: ['refund'],
 *   match: (_tool, params) => Number(params.amount) > 100,
 *   result: PermissionResult.ASK,
 *   reason: 'Refunds over 100 need a human',
 * };
 */
export interface PermissionRule {
  readonly name: string;
  /** Receives the tool and the validated arguments. A rule whose `match` throws denies the call. */
  readonly match?: (tool: Tool, params: Readonly<Record<string, unknown>>) => boolean;
  readonly result: PermissionResult;
  /** Explanation surfaced in the PermissionRequest, the Decision and the refusal text. */
  readonly reason?: string;
  /** Only tools with one of these names (compared in canonical form) can match. */
  readonly tools?: readonly string[];
  /** Only tools carrying at least one of these tags (predefined or custom) can match. */
  readonly tags?: readonly string[];
  /**
   * A further selector on the tool alone (not its arguments), for selections the name and tag index
   * cannot express, such as a glob over names. It is asked once per tool and the answer is kept with
   * the tool's candidate list, so it costs nothing per call. A `select` that throws or answers anything
   * but a boolean selects the tool and denies its calls (as a throwing `match` does), so that a broken
   * selector can neither hide a deny rule nor let an allow rule through.
   */
  readonly select?: (tool: Tool) => boolean;
}

/** A rule checked and prepared for evaluation. */
export interface CompiledRule {
  readonly rule: PermissionRule;
  readonly index: number;
  readonly name: string;
  readonly result: PermissionResult;
  readonly reason: string;
  readonly tools: ReadonlySet<string> | null;
  readonly tags: ReadonlySet<string> | null;
  readonly match: NonNullable<PermissionRule['match']> | null;
  /** The `select` answer for a tool, kept per tool: true, false, or the text of what went wrong. */
  readonly select: ((tool: Tool) => boolean | string) | null;
}

const RULE_KEYS: ReadonlySet<string> = new Set(['name', 'result', 'reason', 'tools', 'tags', 'match', 'select']);

export function compileRule(rule: PermissionRule, index: number): CompiledRule {
  const where = (): string => `permission rule #${index + 1}`;
  if (typeof rule !== 'object' || rule === null)
    throw new ConfigurationError(`${where()}: expected a rule object, got ${describe(rule)}`);
  if (typeof rule.name !== 'string' || rule.name === '') {
    throw new ConfigurationError(`${where()}: "name" must be a non-empty string, got ${describe(rule.name)}`);
  }
  // Words for an error only: built when one is thrown (a policy file compiles 10,000 rules, issue 25).
  const named = (): string => `permission rule ${JSON.stringify(rule.name)}`;
  // A key the gate does not read would be ignored — a misspelt or foreign condition (`when`, `if`, `args`)
  // would leave the rule matching every call of its tools: refused, naming it.
  for (const key of Object.keys(rule))
    if (!RULE_KEYS.has(key))
      throw new ConfigurationError(
        `${named()}: unknown key ${JSON.stringify(key)} (a rule has ${[...RULE_KEYS].join(', ')}; a condition on the arguments is "match")`,
      );
  if (!isPermissionResult(rule.result)) {
    throw new ConfigurationError(`${named()}: "result" must be 'allow', 'deny' or 'ask', got ${describe(rule.result)}`);
  }
  if (rule.match !== undefined && typeof rule.match !== 'function') {
    throw new ConfigurationError(`${named()}: "match" must be a function, got ${describe(rule.match)}`);
  }
  if (rule.select !== undefined && typeof rule.select !== 'function') {
    throw new ConfigurationError(`${named()}: "select" must be a function, got ${describe(rule.select)}`);
  }
  const tools = selector(rule.tools, () => `${named()}: "tools"`, canonical);
  const tags = selector(
    rule.tags,
    () => `${named()}: "tags"`,
    (t) => t,
  );
  if (rule.match === undefined && rule.select === undefined && tools === null && tags === null) {
    throw new ConfigurationError(
      `${named()}: give "match", "select", "tools" or "tags" (a rule with none would match every call)`,
    );
  }
  if (rule.reason !== undefined && typeof rule.reason !== 'string') {
    throw new ConfigurationError(`${named()}: "reason" must be a string, got ${describe(rule.reason)}`);
  }
  return Object.freeze({
    rule,
    index,
    name: rule.name,
    result: rule.result,
    reason: rule.reason ?? `rule ${JSON.stringify(rule.name)}`,
    tools,
    tags,
    match: rule.match ?? null,
    select: rule.select === undefined ? null : keptSelect(rule.select, rule.name),
  });
}

function keptSelect(select: (tool: Tool) => boolean, name: string): (tool: Tool) => boolean | string {
  const kept = new WeakMap<Tool, boolean | string>();
  return (tool) => {
    let verdict = kept.get(tool);
    if (verdict === undefined) {
      try {
        const answer: unknown = select(tool);
        verdict =
          typeof answer === 'boolean'
            ? answer
            : `rule ${JSON.stringify(name)}: select returned ${describe(answer)}; expected a boolean`;
      } catch (error) {
        verdict = `rule ${JSON.stringify(name)}: select threw: ${error instanceof Error ? error.message : String(error)}`;
      }
      kept.set(tool, verdict);
    }
    return verdict;
  };
}

function selector(value: unknown, where: () => string, form: (s: string) => string): ReadonlySet<string> | null {
  if (value === undefined) return null;
  if (!Array.isArray(value))
    throw new ConfigurationError(`${where()} must be an array of strings, got ${describe(value)}`);
  const set = new Set<string>();
  for (const item of value) {
    if (typeof item !== 'string' || item === '')
      throw new ConfigurationError(`${where()} must hold non-empty strings, got ${describe(item)}`);
    set.add(form(item));
  }
  return set;
}

/** True when the rule's selectors admit the tool (all must, where several are given). */
export function selects(rule: CompiledRule, tool: Tool): boolean {
  if (rule.tools !== null && !rule.tools.has(tool.canonicalName)) return false;
  if (rule.tags !== null) {
    let tagged = false;
    for (const tag of rule.tags) {
      if (tool.metadata.allTags.has(tag)) {
        tagged = true;
        break;
      }
    }
    if (!tagged) return false;
  }
  // A select that failed selects the tool; evaluation then denies the call (see tryMatch in policy.ts).
  return rule.select === null || rule.select(tool) !== false;
}
