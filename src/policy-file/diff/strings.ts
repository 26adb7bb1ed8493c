/**
 * Strings that satisfy a conjunction of conditions, by product automata: the glob automaton of glob.ts
 * (its segments and tokens, run character by character), a prefix, a set of excluded strings and, for
 * `path` tests, the "clean path" automaton (a path that `resolvePath` gives back unchanged). Breadth-first
 * search over the product finds the shortest string every condition accepts, or proves that none exists
 * over the alphabet's cells (intervals of code points that no component tells apart).
 *
 * A condition is a function of its components' answers (a glob test is T on a match, U on the folder a
 * `dir/**` leaves out, F otherwise; a block of tests answers with its first non-T), so one search handles
 * the ordered tests of a rule as the matcher runs them.
 *
 * What it proves: "no string" is exact when every component reads the same text (all case-sensitive, or
 * all case-insensitive over the folded text) and no component reads the raw text beside one that reads
 * its NFC form; the caller (values.ts) says when that holds and otherwise treats "none found" as unknown.
 */
import { EMPTY, excludeMachine, machineOf, track, type Component } from './string-machines.js';

export type { Component } from './string-machines.js';

/** T holds, F does not hold, U cannot be judged. */
export type Outcome = 'T' | 'F' | 'U';

/** A condition over some components' bits: allowed when `outcome(bits)` is one of `allowed`. */
export interface Condition {
  readonly components: readonly number[];
  readonly outcome: (bits: readonly boolean[]) => Outcome;
  readonly allowed: ReadonlySet<Outcome>;
}

/** What to search for. */
export interface StringProblem {
  /** 'path': `/` separates segments (path and glob tests); 'names': a tool name, one segment. */
  readonly mode: 'path' | 'names';
  readonly components: readonly Component[];
  readonly conditions: readonly Condition[];
  /** Strings that are not candidates (the values equals/oneOf name, handled apart; names already taken). */
  readonly exclude: readonly string[];
  /** Prefer characters whose folded form is themselves (a case-insensitive search over folded text). */
  readonly folded?: boolean;
  /** Characters a witness must not use beyond the alphabet's need (a tool name: canonical characters). */
  readonly accept?: (cp: number) => boolean;
  /** The most product states to visit. @default 20_000 */
  readonly maxStates?: number;
}

export type StringAnswer =
  | { readonly status: 'sat'; readonly witness: string }
  | { readonly status: 'unsat' }
  | { readonly status: 'too-large' };

// ---- the alphabet ----

/** Code points no component tells apart form one cell; the search tries one representative per cell. */
function alphabet(problem: StringProblem): number[] {
  const points = new Set<number>([0, 0x20, 0x21, 0x2e, 0x2f, 0x30, 0x3a, 0x3b, 0x25, 0x26, 0x5c, 0x5d, 0x7e, 0x7f]);
  const add = (cp: number): void => {
    points.add(cp);
    points.add(cp + 1);
  };
  const addText = (text: string): void => {
    for (const ch of text) {
      const cp = ch.codePointAt(0)!;
      add(cp);
      if (cp >= 0x41 && cp <= 0x5a) add(cp + 0x20);
      if (cp >= 0x61 && cp <= 0x7a) add(cp - 0x20);
    }
  };
  // Letters, digits and the characters a URL scheme may hold (the clean machine tells them apart), and hex.
  for (const [lo, hi] of [
    [0x30, 0x39],
    [0x41, 0x46],
    [0x47, 0x5a],
    [0x61, 0x66],
    [0x67, 0x7a],
  ] as const) {
    points.add(lo);
    points.add(hi + 1);
  }
  for (const cp of [0x2b, 0x2d, 0x5f]) add(cp);
  for (const c of problem.components) {
    if (c.kind === 'prefix') addText(c.text);
    if (c.kind !== 'glob') continue;
    for (const alt of [...c.glob.alternatives, ...c.glob.folders])
      for (const s of alt) {
        if (s.kind === 'literal') addText(s.text);
        if (s.kind !== 'wild') continue;
        for (const t of s.tokens) {
          if (t.kind === 'char') addText(String.fromCodePoint(t.cp));
          if (t.kind === 'class')
            for (let r = 0; r < t.ranges.length; r += 2) {
              points.add(t.ranges[r]!);
              points.add(t.ranges[r + 1]! + 1);
            }
        }
      }
  }
  for (const s of problem.exclude) addText(s);
  points.add(0xd800);
  points.add(0xe000);
  points.add(0x110000);
  const bounds = [...points].filter((p) => p >= 0 && p <= 0x110000).sort((a, b) => a - b);
  const reps: number[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const lo = bounds[i]!;
    const hi = bounds[i + 1]! - 1;
    if (lo >= 0xd800 && hi <= 0xdfff) continue; // lone surrogates: values.ts tries ill-formed text apart
    const rep = representative(lo, hi, problem);
    if (rep !== null) reps.push(rep);
  }
  return reps.sort((a, b) => rank(a) - rank(b) || a - b);
}

const representatives = new Map<string, number | null>();

function representative(lo: number, hi: number, problem: StringProblem): number | null {
  // Kept per cell and kind of search (the accept predicate is the tool-name check, one per process).
  const key = `${lo},${hi},${problem.folded === true},${problem.accept ? 1 : 0}`;
  if (representatives.has(key)) return representatives.get(key)!;
  const rep = findRepresentative(lo, hi, problem);
  representatives.set(key, rep);
  return rep;
}

function findRepresentative(lo: number, hi: number, problem: StringProblem): number | null {
  const limit = Math.min(hi, lo + 256);
  let fallback: number | null = null;
  for (let cp = lo; cp <= limit; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    if (problem.accept && !problem.accept(cp)) continue;
    const ch = String.fromCodePoint(cp);
    if (ch.normalize('NFC') !== ch) continue;
    if (problem.folded && ch.toLowerCase() !== ch) continue;
    if (/[\p{L}\p{N}]/u.test(ch)) return cp;
    fallback ??= cp;
  }
  return fallback;
}

/** Letters first, then digits, then punctuation, then the rest: short, readable witnesses. */
function rank(cp: number): number {
  if (cp >= 0x61 && cp <= 0x7a) return 0;
  if (cp >= 0x30 && cp <= 0x39) return 1;
  if (cp >= 0x41 && cp <= 0x5a) return 2;
  if (cp === 0x2f || cp === 0x5f || cp === 0x2d || cp === 0x2e) return 3;
  if (cp > 0x20 && cp < 0x7f) return 4;
  if (cp >= 0xa0) return 5;
  return 6;
}

// ---- the search ----

/**
 * The shortest string (over the alphabet's representatives) that every condition accepts and that is not
 * excluded; `unsat` when none exists; `too-large` past the state budget.
 */
export function solveStrings(problem: StringProblem): StringAnswer {
  const machines = problem.components.map(machineOf);
  const exclude = excludeMachine(problem.exclude);
  const all = [...machines, exclude];
  const letters = alphabet(problem);
  const maxStates = problem.maxStates ?? 20_000;
  const names = problem.mode === 'names';
  const conditions = problem.conditions;

  // A product state: every machine's state, and the tracker (current segment's class | previous << 2).
  const start = all.map((m) => m.initial());
  const key = (states: readonly number[], cls: number): string => `${states.join(',')}|${cls}`;
  const bitsAt = (states: readonly number[], cls: number): boolean[] =>
    machines.map((m, i) => m.accepts(states[i]!, cls));
  const accepted = (states: readonly number[], cls: number): boolean => {
    if (!exclude.accepts(states[machines.length]!, cls)) return false;
    const bits = bitsAt(states, cls);
    return conditions.every((c) => c.allowed.has(c.outcome(c.components.map((i) => bits[i]!))));
  };
  // A condition whose components are all fixed, and answers outside its allowed set: nothing after helps.
  const hopeless = (states: readonly number[]): boolean => {
    if (exclude.fixed(states[machines.length]!) === false) return true;
    for (const c of conditions) {
      const fixed = c.components.map((i) => machines[i]!.fixed(states[i]!));
      if (fixed.some((f) => f === null)) continue;
      if (!c.allowed.has(c.outcome(fixed as boolean[]))) return true;
    }
    return false;
  };

  interface Node {
    readonly states: readonly number[];
    readonly cls: number;
    readonly parent: Node | null;
    readonly cp: number;
  }
  const seen = new Set<string>();
  let frontier: Node[] = [{ states: start, cls: EMPTY, parent: null, cp: -1 }];
  seen.add(key(start, EMPTY));
  let visited = 0;
  while (frontier.length > 0) {
    const next: Node[] = [];
    for (const node of frontier) {
      if (accepted(node.states, node.cls)) return { status: 'sat', witness: spell(node) };
      if (hopeless(node.states)) continue;
      for (const cp of letters) {
        const current = node.cls & 3;
        const cls = cp === 0x2f && !names ? EMPTY | (current << 2) : track(current, cp) | ((node.cls >> 2) << 2);
        const states = all.map((m, i) => m.step(node.states[i]!, cp, current));
        const k = key(states, cls);
        if (seen.has(k)) continue;
        seen.add(k);
        if (++visited > maxStates) return { status: 'too-large' };
        next.push({ states, cls, parent: node, cp });
      }
    }
    frontier = next;
  }
  return { status: 'unsat' };
}

function spell(node: { readonly parent: unknown; readonly cp: number }): string {
  const cps: number[] = [];
  let n = node as { readonly parent: { readonly parent: unknown; readonly cp: number } | null; readonly cp: number };
  while (n.parent !== null) {
    cps.push(n.cp);
    n = n.parent as typeof n;
  }
  return String.fromCodePoint(...cps.reverse());
}
