/**
 * The search for calls two first-match rule lists decide differently. A depth-first walk over both lists:
 * at each rule it branches on how the rule fares (it matches; its tests of one argument fail first; one
 * cannot judge) and adds the literals that say so to the box, a conjunction per variable (an argument,
 * the tool's own tags, the name of a tool neither file mentions). A box some variable cannot satisfy is
 * dropped; when both lists have decided, the two verdicts are compared and, if they differ, the box is a
 * changed region with the witness its variables' solvers found.
 *
 * Pruned: two identical rule lists from here on (and the same fallback) decide alike; a rule both lists
 * hold next is walked once for both (only its "no match" branches continue); one side decided with an
 * effect that is the only one the other side can still reach.
 */
import type { PermissionResult } from '../../permissions/result.js';
import type { DiffRule } from './rules.js';
import type { Outcome } from './strings.js';
import {
  solveArgument,
  solveName,
  solveTags,
  type NameLiteral,
  type NameTest,
  type TagLiteral,
  type VarAnswer,
  type VarLiteral,
} from './values.js';

/** One rule in one tool's candidate list, and which of its selectors depend on what is unknown. */
export interface Entry {
  readonly rule: DiffRule;
  /** The rule's tag selector depends on the tool's own tags. */
  readonly byTags: boolean;
  /** The rule's name selectors test the name of a tool neither file mentions. */
  readonly byName: readonly NameTest[] | null;
}

/** How a side decides, as the search sees it. */
export interface Verdict {
  readonly effect: PermissionResult;
  readonly by: 'rule' | 'fallback' | 'rule_error' | 'allowlist' | 'context';
  readonly rule: DiffRule | null;
  /** For allowlist and context verdicts: the layer and why. */
  readonly layer?: string;
  readonly reason?: string;
}

/** One side of the search: a candidate list and its fallback, or a fixed verdict (a layer refuses). */
export type Side =
  { readonly entries: readonly Entry[]; readonly fallback: PermissionResult } | { readonly fixed: Verdict };

/** A variable's answer: an argument's or a name's value, or the fewest own tags. */
export type BoxAnswer = VarAnswer | { readonly status: 'sat'; readonly tags: string[] };

export interface Box {
  readonly lits: ReadonlyMap<string, readonly unknown[]>;
  readonly answers: ReadonlyMap<string, BoxAnswer>;
  /** Why some variable could not be decided (the box may be empty). */
  readonly unknown: readonly string[];
}

export interface Leaf {
  readonly box: Box;
  readonly old: Verdict;
  readonly new: Verdict;
  /** How many boxes (disjoint sub-regions) the leaf stands for. */
  readonly boxes: number;
}

export interface SearchResult {
  /** Changed regions with a witness, one per pair of verdicts. */
  readonly leaves: readonly Leaf[];
  /** Regions that may change (a box that could not be decided), one per pair of verdicts not in `leaves`. */
  readonly uncertain: readonly Leaf[];
  /** The search stopped at its budget: what it did not visit may change. */
  readonly exhausted: boolean;
}

export interface SearchOptions {
  /** Names a tool neither file mentions may not take. */
  readonly taken: readonly string[];
  readonly validName: (name: string) => boolean;
  /** The most branches to walk. */
  readonly budget: number;
}

const T = new Set<Outcome>(['T']);
const F = new Set<Outcome>(['F']);
const U = new Set<Outcome>(['U']);

/** Same rule for an ask: by name, or by what it decides (a renamed rule asks the same person the same thing). */
function sameRule(a: DiffRule | null, b: DiffRule | null): boolean {
  if (a === null || b === null) return a === b;
  return a.name === b.name || a.fingerprint === b.fingerprint;
}

function verdictsDiffer(a: Verdict, b: Verdict): boolean {
  if (a.effect !== b.effect) return true;
  return a.effect === 'ask' && !sameRule(a.rule, b.rule);
}

function verdictKey(v: Verdict): string {
  return `${v.effect}:${v.by}:${v.rule?.name ?? ''}:${v.layer ?? ''}`;
}

type Literal = { key: string; lit: VarLiteral | NameLiteral | TagLiteral };

/** The branches of one rule: each the literals that make it fare one way, and how. */
function branches(
  entry: Entry,
): { readonly lits: readonly Literal[]; readonly fares: 'match' | 'nomatch' | 'error' }[] {
  const blocks: { key: string; lit: (allowed: ReadonlySet<Outcome>) => Literal['lit']; canFail: boolean }[] = [];
  if (entry.byName !== null && entry.byName.length > 0)
    blocks.push({ key: '#name', lit: (allowed) => ({ tests: entry.byName!, allowed }), canFail: false });
  if (entry.byTags)
    blocks.push({
      key: '#tags',
      lit: (allowed) => ({ any: entry.rule.tags ?? [], allowed: allowed.has('T') ? 'T' : 'F' }),
      canFail: false,
    });
  for (const b of entry.rule.blocks)
    blocks.push({ key: b.key, lit: (allowed) => ({ tests: b.tests, allowed }), canFail: true });
  const out: { lits: Literal[]; fares: 'match' | 'nomatch' | 'error' }[] = [];
  const before: Literal[] = [];
  for (const b of blocks) {
    out.push({ lits: [...before, { key: b.key, lit: b.lit(F) }], fares: 'nomatch' });
    if (b.canFail) out.push({ lits: [...before, { key: b.key, lit: b.lit(U) }], fares: 'error' });
    before.push({ key: b.key, lit: b.lit(T) });
  }
  out.push({ lits: before, fares: 'match' });
  return out;
}

function solve(key: string, lits: readonly unknown[], options: SearchOptions): BoxAnswer {
  if (key === '#tags') {
    const tags = solveTags(lits as TagLiteral[]);
    return tags === null ? { status: 'unsat' } : { status: 'sat', tags };
  }
  if (key === '#name') return solveName(lits as NameLiteral[], options.taken, options.validName);
  return solveArgument(lits as VarLiteral[]);
}

function extend(box: Box, add: readonly Literal[], options: SearchOptions): Box | null {
  if (add.length === 0) return box;
  const lits = new Map(box.lits);
  const touched = new Set<string>();
  for (const { key, lit } of add) {
    lits.set(key, [...(lits.get(key) ?? []), lit]);
    touched.add(key);
  }
  const answers = new Map(box.answers);
  const unknown = [...box.unknown];
  for (const key of touched) {
    const answer = solve(key, lits.get(key)!, options);
    if (answer.status === 'unsat') return null;
    if (answer.status === 'unknown') unknown.push(answer.reason);
    answers.set(key, answer);
  }
  return { lits, answers, unknown };
}

/** The effects a list can still reach from position i (a rule with argument tests may also deny as rule_error). */
function reachable(entries: readonly Entry[], fallback: PermissionResult): Set<PermissionResult>[] {
  const out: Set<PermissionResult>[] = new Array(entries.length + 1);
  out[entries.length] = new Set([fallback]);
  for (let i = entries.length - 1; i >= 0; i--) {
    const s = new Set(out[i + 1]);
    s.add(entries[i]!.rule.result);
    if (entries[i]!.rule.blocks.length > 0) s.add('deny');
    out[i] = s;
  }
  return out;
}

/** Compares how two sides decide every call of one tool (or tool class). */
export function search(oldSide: Side, newSide: Side, options: SearchOptions): SearchResult {
  const leaves = new Map<string, Leaf>();
  const uncertain = new Map<string, Leaf>();
  let budget = options.budget;
  let exhausted = false;
  const oldEntries = 'entries' in oldSide ? oldSide.entries : null;
  const newEntries = 'entries' in newSide ? newSide.entries : null;
  const oldReach = oldEntries ? reachable(oldEntries, (oldSide as { fallback: PermissionResult }).fallback) : null;
  const newReach = newEntries ? reachable(newEntries, (newSide as { fallback: PermissionResult }).fallback) : null;
  const sameEntry = (a: Entry, b: Entry): boolean =>
    a.rule.fingerprint === b.rule.fingerprint && a.byTags === b.byTags && (a.byName === null) === (b.byName === null);
  const suffixMemo = new Map<number, boolean>();
  const sameSuffix = (i: number, j: number): boolean => {
    if (!oldEntries || !newEntries) return false;
    if ((oldSide as { fallback: string }).fallback !== (newSide as { fallback: string }).fallback) return false;
    if (oldEntries.length - i !== newEntries.length - j) return false;
    const k = i * (newEntries.length + 1) + j;
    let same = suffixMemo.get(k);
    if (same === undefined) {
      same = true;
      for (let d = 0; i + d < oldEntries.length; d++)
        if (!sameEntry(oldEntries[i + d]!, newEntries[j + d]!)) {
          same = false;
          break;
        }
      suffixMemo.set(k, same);
    }
    return same;
  };

  const leaf = (box: Box, o: Verdict, n: Verdict): void => {
    if (!verdictsDiffer(o, n)) return;
    const key = `${verdictKey(o)}|${verdictKey(n)}`;
    if (box.unknown.length > 0) {
      if (!leaves.has(key) && !uncertain.has(key)) uncertain.set(key, { box, old: o, new: n, boxes: 1 });
      return;
    }
    const had = leaves.get(key);
    if (had) leaves.set(key, { ...had, boxes: had.boxes + 1 });
    else {
      leaves.set(key, { box, old: o, new: n, boxes: 1 });
      uncertain.delete(key);
    }
  };

  const decided = (entries: readonly Entry[], i: number, fares: 'match' | 'error'): Verdict => {
    const rule = entries[i]!.rule;
    return fares === 'match' ? { effect: rule.result, by: 'rule', rule } : { effect: 'deny', by: 'rule_error', rule };
  };

  const walk = (box: Box, i: number, j: number, o: Verdict | null, n: Verdict | null): void => {
    if (exhausted) return;
    if (--budget < 0) {
      exhausted = true;
      return;
    }
    if (o === null && 'fixed' in oldSide) o = oldSide.fixed;
    if (n === null && 'fixed' in newSide) n = newSide.fixed;
    if (o === null && i === oldEntries!.length)
      o = { effect: (oldSide as { fallback: PermissionResult }).fallback, by: 'fallback', rule: null };
    if (n === null && j === newEntries!.length)
      n = { effect: (newSide as { fallback: PermissionResult }).fallback, by: 'fallback', rule: null };
    if (o !== null && n !== null) return leaf(box, o, n);
    if (o === null && n === null) {
      if (sameSuffix(i, j)) return;
      const a = oldEntries![i]!;
      const b = newEntries![j]!;
      if (sameEntry(a, b)) {
        // One rule on both sides: matching or failing to judge decides both alike.
        for (const br of branches(a)) {
          if (br.fares !== 'nomatch') continue;
          const next = extend(box, br.lits, options);
          if (next) walk(next, i + 1, j + 1, null, null);
        }
        return;
      }
    }
    // One side decided with an effect the other can reach no other way than alike: nothing changes below.
    if (o !== null && o.effect !== 'ask' && newReach && newReach[j]!.size === 1 && newReach[j]!.has(o.effect)) return;
    if (n !== null && n.effect !== 'ask' && oldReach && oldReach[i]!.size === 1 && oldReach[i]!.has(n.effect)) return;
    if (o === null) {
      const entries = oldEntries!;
      for (const br of branches(entries[i]!)) {
        const next = extend(box, br.lits, options);
        if (!next) continue;
        if (br.fares === 'nomatch') walk(next, i + 1, j, null, n);
        else walk(next, i, j, decided(entries, i, br.fares), n);
      }
      return;
    }
    const entries = newEntries!;
    for (const br of branches(entries[j]!)) {
      const next = extend(box, br.lits, options);
      if (!next) continue;
      if (br.fares === 'nomatch') walk(next, i, j + 1, o, null);
      else walk(next, i, j, o, decided(entries, j, br.fares));
    }
  };

  walk({ lits: new Map(), answers: new Map(), unknown: [] }, 0, 0, null, null);
  return { leaves: [...leaves.values()], uncertain: [...uncertain.values()], exhausted };
}
