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
  readonly match: NonNullable<PermissionRule["match"]> | null;
}

export function compileRule(rule: PermissionRule, index: number): CompiledRule {
  const where = `permission rule #${index + 1}`;
  if (typeof rule !== 'object' || rule === null) throw new ConfigurationError(`${where}: expected a rule object, got ${describe(rule)}`);
  if (typeof rule.name !== 'string' || rule.name === '') {
    throw new ConfigurationError(`${where}: "name" must be a non-empty string, got ${describe(rule.name)}`);
  }
  const named = `permission rule ${JSON.stringify(rule.name)}`;
  if (!isPermissionResult(rule.result)) {
    throw new ConfigurationError(`${named}: "result" must be 'allow', 'deny' or 'ask', got ${describe(rule.result)}`);
  }
  if (rule.match !== undefined && typeof rule.match !== 'function') {
    throw new ConfigurationError(`${named}: "match" must be a function, got ${describe(rule.match)}`);
  }
  const tools = selector(rule.tools, `${named}: "tools"`, canonical);
  const tags = selector(rule.tags, `${named}: "tags"`, (t) => t);
  if (rule.match === undefined && tools === null && tags === null) {
    throw new ConfigurationError(`${named}: give "match", "tools" or "tags" (a rule with none would match every call)`);
  }
  if (rule.reason !== undefined && typeof rule.reason !== 'string') {
    throw new ConfigurationError(`${named}: "reason" must be a string, got ${describe(rule.reason)}`);
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
  });
}

function selector(value: unknown, where: string, form: (s: string) => string): ReadonlySet<string> | null {
  if (value === undefined) return null;
  if (!Array.isArray(value)) throw new ConfigurationError(`${where} must be an array of strings, got ${describe(value)}`);
  const set = new Set<string>();
  for (const item of value) {
    if (typeof item !== 'string' || item === '') throw new ConfigurationError(`${where} must hold non-empty strings, got ${describe(item)}`);
    set.add(form(item));
  }
  return set;
}

/** True when the rule's selectors admit the tool (both must, where both are given). */
export function selects(rule: CompiledRule, tool: Tool): boolean {
  if (rule.tools !== null && !rule.tools.has(tool.canonicalName)) return false;
  if (rule.tags !== null) {
    for (const tag of rule.tags) if (tool.metadata.allTags.has(tag)) return true;
    return false;
  }
  return true;
}
