import { randomUUID } from 'node:crypto';
import { ConfigurationError } from '../errors.js';
import { describe } from '../names.js';
import type { Tool } from '../tool.js';
import { errorText, isPermissionHandler, type PermissionHandler } from './handler.js';
import { isPermissionResult, PermissionResult } from './result.js';
import { compileRule, selects, type CompiledRule, type PermissionRule } from './rule.js';

/** @internal A policy's outcome for a tool whatever the arguments, or null (src/gate/precheck.ts keeps it per form). */
export const FIXED_OUTCOME = Symbol('toolgate.policy.fixedOutcome');

/** Options of {@link PermissionPolicy}. */
export interface PermissionPolicyOptions {
  /** Evaluated in order; the first rule that matches decides. */
  readonly rules: readonly PermissionRule[];
  /** The result when no rule matches. @default 'deny' */
  readonly fallback?: PermissionResult;
  /** Decides `ask` results; takes precedence over the registry's handler. @default undefined */
  readonly handler?: PermissionHandler;
  /**
   * A label for this version of the policy; approvals are bound to it. Pin it to resume a paused run in
   * another process. @default a random UUID per policy object (so two processes never share a label by accident)
   */
  readonly version?: string;
}

/** How one rule fared in a traced evaluation. */
export interface RuleTrace {
  readonly rule: string;
  readonly index: number;
  readonly outcome: 'matched' | 'not_matched' | 'not_selected' | 'threw' | 'not_reached';
  readonly detail?: string;
}

/** The outcome of evaluating a policy for one call. */
export type PolicyEvaluation =
  | {
      readonly result: PermissionResult;
      readonly by: 'rule';
      readonly rule: CompiledRule;
      readonly error?: never;
      readonly trace?: readonly RuleTrace[];
    }
  | {
      readonly result: PermissionResult;
      readonly by: 'fallback';
      readonly rule: null;
      readonly error?: never;
      readonly trace?: readonly RuleTrace[];
    }
  | {
      readonly result: 'deny';
      readonly by: 'rule_error';
      readonly rule: CompiledRule;
      readonly error: string;
      readonly trace?: readonly RuleTrace[];
    };

/**
 * An ordered list of rules with a fallback (the Permission System spec). Rules are indexed by their
 * `tools` and `tags` selectors, so the rules tried for a call are the ones that can match it; the list
 * for each tool is computed once and kept.
 *
 * @example
 * const policy = new PermissionPolicy({
 *   rules: [ALLOW_READONLY, DENY_PRIVILEGED, ASK_DESTRUCTIVE],
 *   fallback: PermissionResult.DENY,
 * });
 */
export class PermissionPolicy {
  readonly rules: readonly PermissionRule[];
  readonly fallback: PermissionResult;
  readonly handler: PermissionHandler | null;
  readonly version: string;
  readonly #compiled: readonly CompiledRule[];
  readonly #byName = new Map<string, CompiledRule[]>();
  readonly #byTag = new Map<string, CompiledRule[]>();
  readonly #unselected: CompiledRule[] = [];
  readonly #candidates = new WeakMap<Tool, Candidates>();

  constructor(options: PermissionPolicyOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError(`PermissionPolicy expects an options object, got ${describe(options)}`);
    }
    if (!Array.isArray(options.rules)) {
      throw new TypeError(`PermissionPolicy option "rules" must be an array of rules, got ${describe(options.rules)}`);
    }
    const fallback = options.fallback ?? PermissionResult.DENY;
    if (!isPermissionResult(fallback)) {
      throw new TypeError(
        `PermissionPolicy option "fallback" must be 'allow', 'deny' or 'ask', got ${describe(fallback)}`,
      );
    }
    if (options.handler !== undefined && !isPermissionHandler(options.handler)) {
      throw new TypeError(
        `PermissionPolicy option "handler" must be a function or an object with handle(request), got ${describe(options.handler)}`,
      );
    }
    if (options.version !== undefined && typeof options.version !== 'string') {
      throw new TypeError(`PermissionPolicy option "version" must be a string, got ${describe(options.version)}`);
    }
    this.#compiled = options.rules.map(compileRule);
    const seen = new Set<string>();
    for (const rule of this.#compiled) {
      if (seen.has(rule.name))
        throw new ConfigurationError(
          `permission rule name ${JSON.stringify(rule.name)} is used twice; rule names identify decisions and must be unique`,
        );
      seen.add(rule.name);
      // A rule with a name selector is indexed by name only (the tag check still runs in selects()).
      if (rule.tools !== null) for (const name of rule.tools) push(this.#byName, name, rule);
      else if (rule.tags !== null) for (const tag of rule.tags) push(this.#byTag, tag, rule);
      else this.#unselected.push(rule);
    }
    this.rules = Object.freeze([...options.rules]);
    this.fallback = fallback;
    this.handler = options.handler ?? null;
    this.version = options.version ?? `policy-${randomUUID()}`;
    Object.freeze(this);
  }

  /** The rules that can match `tool`, in policy order. */
  candidates(tool: Tool): readonly CompiledRule[] {
    return this.#candidatesOf(tool).list;
  }

  /**
   * @internal What {@link evaluate} (untraced) answers for `tool` whatever the arguments — the same frozen object —
   * or null when its rules must be tried on each call's arguments.
   */
  [FIXED_OUTCOME](tool: Tool): PolicyEvaluation | null {
    return this.#candidatesOf(tool).fixed;
  }

  #candidatesOf(tool: Tool): Candidates {
    // The build is a method of its own: its arrow functions capture `tool`, which made every call of this one
    // allocate a context for it, hit or not (40 bytes of an `invoke`, issue 25).
    return this.#candidates.get(tool) ?? this.#candidatesBuilt(tool);
  }

  #candidatesBuilt(tool: Tool): Candidates {
    const found = new Set<CompiledRule>(this.#unselected);
    for (const rule of this.#byName.get(tool.canonicalName) ?? []) found.add(rule);
    for (const tag of tool.metadata.allTags) for (const rule of this.#byTag.get(tag) ?? []) found.add(rule);
    const list = [...found].filter((rule) => selects(rule, tool)).sort((a, b) => a.index - b.index);
    // The outcome for this tool whatever the arguments: no rule can select it (the fallback), or the first one
    // that can has neither `select` nor `match` (it matches every call). Kept, frozen, and returned as is.
    const first = list[0];
    const fixed: PolicyEvaluation | null =
      first === undefined
        ? Object.freeze({ result: this.fallback, by: 'fallback', rule: null })
        : first.select === null && first.match === null
          ? Object.freeze({ result: first.result, by: 'rule', rule: first })
          : null;
    const entry = { list, fixed };
    this.#candidates.set(tool, entry);
    return entry;
  }

  /**
   * Evaluates the rules for one call: the first matching rule decides, else the fallback. A `match` that
   * throws or returns anything but a boolean denies the call and is reported (`by: 'rule_error'`).
   * With `trace`, every rule is reported, with why it did or did not match.
   */
  evaluate(
    tool: Tool,
    params: Readonly<Record<string, unknown>>,
    options?: { readonly trace?: boolean },
  ): PolicyEvaluation {
    if (options?.trace) return this.#evaluateTraced(tool, params);
    const { list, fixed } = this.#candidatesOf(tool);
    if (fixed !== null) return fixed;
    for (const rule of list) {
      const verdict = tryMatch(rule, tool, params);
      if (verdict === true) return { result: rule.result, by: 'rule', rule };
      if (verdict !== false) return { result: 'deny', by: 'rule_error', rule, error: verdict };
    }
    return { result: this.fallback, by: 'fallback', rule: null };
  }

  #evaluateTraced(tool: Tool, params: Readonly<Record<string, unknown>>): PolicyEvaluation {
    const trace: RuleTrace[] = [];
    let decided: PolicyEvaluation | undefined;
    for (const rule of this.#compiled) {
      if (decided) {
        trace.push({ rule: rule.name, index: rule.index, outcome: 'not_reached' });
      } else if (!selects(rule, tool)) {
        trace.push({ rule: rule.name, index: rule.index, outcome: 'not_selected', detail: selectorText(rule) });
      } else {
        const verdict = tryMatch(rule, tool, params);
        if (verdict === true) {
          trace.push({ rule: rule.name, index: rule.index, outcome: 'matched' });
          decided = { result: rule.result, by: 'rule', rule, trace };
        } else if (verdict === false) {
          trace.push({ rule: rule.name, index: rule.index, outcome: 'not_matched' });
        } else {
          trace.push({ rule: rule.name, index: rule.index, outcome: 'threw', detail: verdict });
          decided = { result: 'deny', by: 'rule_error', rule, error: verdict, trace };
        }
      }
    }
    return decided ?? { result: this.fallback, by: 'fallback', rule: null, trace };
  }
}

/** The rules that can select a tool, in order, and the outcome for it when that needs no arguments. */
interface Candidates {
  readonly list: readonly CompiledRule[];
  readonly fixed: PolicyEvaluation | null;
}

/** true or false, or the text of what went wrong. */
function tryMatch(rule: CompiledRule, tool: Tool, params: Readonly<Record<string, unknown>>): boolean | string {
  if (rule.select !== null) {
    const selected = rule.select(tool);
    if (typeof selected === 'string') return selected;
  }
  if (rule.match === null) return true;
  try {
    const verdict: unknown = rule.match(tool, params);
    if (typeof verdict === 'boolean') return verdict;
    return `rule ${JSON.stringify(rule.name)}: match returned ${describe(verdict)}; expected a boolean`;
  } catch (error) {
    return `rule ${JSON.stringify(rule.name)}: match threw: ${errorText(error)}`;
  }
}

function selectorText(rule: CompiledRule): string {
  const parts: string[] = [];
  if (rule.tools) parts.push(`tools ${[...rule.tools].join(', ')}`);
  if (rule.tags) parts.push(`tags ${[...rule.tags].join(', ')}`);
  if (rule.select) parts.push('its select() predicate');
  return `selects ${parts.join(' and ')}`;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
