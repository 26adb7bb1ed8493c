/**
 * A policy file's rules as the diff reads them: each rule's selectors, its tests grouped into one block
 * per argument (in the order the matcher runs them), and a fingerprint of what it decides (everything but
 * its name and reason), so that a renamed or moved rule is recognised as the same rule.
 */
import { globStructure, type GlobStructure } from '../glob.js';
import { namespaceOf } from '../../names.js';
import type { PermissionResult } from '../../permissions/result.js';
import type { PolicyRuleInfo, PolicySet } from '../policy-set.js';
import { testSpec, type TestSpec } from './values.js';

/** A rule's tests of one argument, run in order. */
export interface ArgBlock {
  readonly key: string;
  readonly arg: string;
  readonly tests: readonly TestSpec[];
}

/** A rule as the diff reads it. */
export interface DiffRule {
  readonly info: PolicyRuleInfo;
  readonly name: string;
  readonly result: PermissionResult;
  /** The same number for two rules that decide alike (name and reason aside). */
  readonly fingerprint: number;
  readonly shadow: boolean;
  readonly exact: ReadonlySet<string>;
  readonly globs: readonly {
    readonly pattern: string;
    readonly structure: GlobStructure;
    readonly test: (name: string) => boolean;
  }[];
  readonly namespace: string | null;
  readonly tags: readonly string[] | null;
  readonly blocks: readonly ArgBlock[];
}

/** Fingerprints shared by the two sides of one diff. */
export class Fingerprints {
  readonly #ids = new Map<string, number>();
  of(text: string): number {
    let id = this.#ids.get(text);
    if (id === undefined) {
      id = this.#ids.size;
      this.#ids.set(text, id);
    }
    return id;
  }
}

/** JSON with sorted keys (two spellings of one object give one text). */
export function stableJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
}

export function diffRules(set: PolicySet, fingerprints: Fingerprints): DiffRule[] {
  return set.rules.map((info) => {
    const when = info.data.when ?? {};
    const blocks: ArgBlock[] = [];
    for (const t of info.tests) {
      const condition = when[t.arg] ?? {};
      const spec = testSpec(t, {
        caseInsensitive: condition.caseInsensitive === true,
        realpath: condition.realpath === true,
      });
      const last = blocks[blocks.length - 1];
      if (last && last.arg === t.arg) (last.tests as TestSpec[]).push(spec);
      else blocks.push({ key: `arg:${t.arg}`, arg: t.arg, tests: [spec] });
    }
    const content = stableJson({
      result: info.result,
      exact: [...info.exact].sort(),
      globs: info.globs.map((g) => g.pattern).sort(),
      namespace: info.namespace,
      tags: info.tags ? [...info.tags].sort() : null,
      when,
    });
    return {
      info,
      name: info.name,
      result: info.result,
      fingerprint: fingerprints.of(content),
      shadow: info.data.mode === 'shadow',
      exact: new Set(info.exact),
      globs: info.globs.map((g) => ({
        pattern: g.pattern,
        structure: globStructure(g.pattern, { names: true }),
        test: g.test,
      })),
      namespace: info.namespace,
      tags: info.tags,
      blocks,
    };
  });
}

/** How a rule selects one tool: not at all, outright, or depending on the tool's own tags. */
export type Selection = 'no' | 'yes' | 'tags';

/**
 * Whether `rule` selects the tool `name`; `tags` are the tags the file gives it, or null when it does not
 * describe the tool (its tags are its own, unknown here: a tag selector then depends on them).
 */
export function selection(rule: DiffRule, name: string, tags: ReadonlySet<string> | null): Selection {
  if (rule.namespace !== null && namespaceOf(name) !== rule.namespace) return 'no';
  if ((rule.exact.size > 0 || rule.globs.length > 0) && !rule.exact.has(name) && !rule.globs.some((g) => g.test(name)))
    return 'no';
  if (rule.tags === null) return 'yes';
  if (tags === null) return 'tags';
  return rule.tags.some((t) => tags.has(t)) ? 'yes' : 'no';
}

/** Whether a rule can select a tool neither file names (a glob, a namespace, tags or no selector). */
export function selectsOthers(rule: DiffRule): boolean {
  return rule.globs.length > 0 || rule.exact.size === 0;
}
