/**
 * One argument's values under a conjunction of literals: "this block of tests answers one of these
 * outcomes". A block is a rule's tests of one argument, run in order as the matcher runs them (its
 * outcome is the first that is not T). The solver finds a value every literal allows, proves none exists,
 * or says it cannot tell (and why):
 *
 * - the values `equals` and `oneOf` name are tried one by one (the real tests run on each);
 * - numbers: interval sets over finite doubles (a bound moved by one leaves the interval between);
 * - strings: product automata (strings.ts) over glob, prefix and path tests;
 * - absent, null, booleans, arrays, objects: each kind answers every test alike, so one value decides.
 *
 * Every value returned has been run through the real tests (matchers.ts) and found to give the outcomes
 * asked for: a witness is never a guess.
 */
import { globStructure, type GlobStructure } from '../glob.js';
import { comparable, jsonEqual, type ConditionOp, type ConditionTest } from '../matchers.js';
import { solveStrings, type Component, type Condition, type Outcome } from './strings.js';

/** One test of a rule on one argument, with what the solver needs beside the test itself. */
export interface TestSpec {
  readonly arg: string;
  readonly op: ConditionOp;
  readonly expected: unknown;
  readonly caseInsensitive: boolean;
  readonly realpath: boolean;
  /** The real test (matchers.ts). */
  readonly run: ConditionTest['test'];
  readonly text: string;
  /** For glob and path tests: each pattern's automaton, over the compared (NFC, folded) form. */
  readonly globs: readonly { readonly absolute: boolean; readonly structure: GlobStructure }[];
}

/** "The block `tests` answers one of `allowed`." */
export interface VarLiteral {
  readonly tests: readonly TestSpec[];
  readonly allowed: ReadonlySet<Outcome>;
}

export type VarAnswer =
  | { readonly status: 'sat'; readonly present: boolean; readonly value: unknown }
  | { readonly status: 'unsat' }
  | { readonly status: 'unknown'; readonly reason: string };

const glob = new Map<string, GlobStructure>();
function structureOf(pattern: string): GlobStructure {
  let s = glob.get(pattern);
  if (!s) {
    s = globStructure(pattern);
    glob.set(pattern, s);
  }
  return s;
}

/** The TestSpec of a compiled test; `options` are the condition's `caseInsensitive` and `realpath`. */
export function testSpec(
  test: ConditionTest,
  options: { readonly caseInsensitive: boolean; readonly realpath: boolean },
): TestSpec {
  const patterns =
    test.op === 'glob' || test.op === 'path'
      ? typeof test.expected === 'string'
        ? [test.expected]
        : (test.expected as string[])
      : [];
  return {
    arg: test.arg,
    op: test.op,
    expected: test.expected,
    caseInsensitive: options.caseInsensitive,
    realpath: options.realpath,
    run: test.test,
    text: test.text,
    globs: patterns.map((p) => ({ absolute: p.startsWith('/'), structure: structureOf(comparable(p, options)) })),
  };
}

function outcomeOf(verdict: boolean | string): Outcome {
  return verdict === true ? 'T' : verdict === false ? 'F' : 'U';
}

/** The block's outcome for a value: the first test that does not hold (F) or cannot judge (U), else T. */
function blockOutcome(tests: readonly TestSpec[], present: boolean, value: unknown): Outcome {
  for (const t of tests) {
    const o = outcomeOf(t.run(present, value));
    if (o !== 'T') return o;
  }
  return 'T';
}

function holds(lits: readonly VarLiteral[], present: boolean, value: unknown): boolean {
  return lits.every((l) => l.allowed.has(blockOutcome(l.tests, present, value)));
}

/** Finds a value of one argument that every literal allows. */
export function solveArgument(lits: readonly VarLiteral[]): VarAnswer {
  if (lits.length === 0) return { status: 'sat', present: false, value: undefined };
  const tests = lits.flatMap((l) => l.tests);
  const named: unknown[] = [];
  for (const t of tests) {
    const values = t.op === 'equals' ? [t.expected] : t.op === 'oneOf' ? (t.expected as unknown[]) : [];
    for (const v of values) if (!named.some((n) => jsonEqual(n, v))) named.push(v);
  }
  for (const v of named) if (holds(lits, true, v)) return { status: 'sat', present: true, value: v };
  const numeric = tests.some((t) => t.op === 'gt' || t.op === 'gte' || t.op === 'lt' || t.op === 'lte');
  const stringy = tests.some((t) => t.op === 'prefix' || t.op === 'glob' || t.op === 'path');
  let unknown: string | null = null;
  const tryNumber = (): VarAnswer | null => {
    const n = numberIn(lits, named);
    return n === null ? null : { status: 'sat', present: true, value: n };
  };
  const tryString = (): VarAnswer | null => {
    const answer = stringIn(lits, named);
    if (answer.status === 'sat') return answer;
    if (answer.status === 'unknown') unknown ??= answer.reason;
    return null;
  };
  const order: (() => VarAnswer | null)[] = [];
  if (numeric) order.push(tryNumber);
  if (stringy) order.push(tryString);
  order.push(() => (holds(lits, false, undefined) ? { status: 'sat', present: false, value: undefined } : null));
  if (!numeric) order.push(tryNumber);
  if (!stringy) order.push(tryString);
  for (const value of [null, true, false, [], {}, [null], { _: null }]) {
    order.push(() =>
      !named.some((n) => jsonEqual(n, value)) && holds(lits, true, value)
        ? { status: 'sat', present: true, value }
        : null,
    );
  }
  for (const attempt of order) {
    const answer = attempt();
    if (answer) return answer;
  }
  return unknown === null ? { status: 'unsat' } : { status: 'unknown', reason: unknown };
}

// ---- numbers ----

interface Interval {
  readonly lo: number;
  readonly loOpen: boolean;
  readonly hi: number;
  readonly hiOpen: boolean;
}

const ALL: Interval = { lo: -Infinity, loOpen: true, hi: Infinity, hiOpen: true };

const view = new DataView(new ArrayBuffer(8));
/** The next double above x (x finite). */
function nextUp(x: number): number {
  if (x === 0) return Number.MIN_VALUE;
  view.setFloat64(0, x);
  const bits = view.getBigInt64(0);
  view.setBigInt64(0, x > 0 ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}
function nextDown(x: number): number {
  return -nextUp(-x);
}

/** The smallest double in the interval, or null when it holds none. */
function least(i: Interval): number | null {
  let x = i.loOpen ? (i.lo === -Infinity ? -Number.MAX_VALUE : nextUp(i.lo)) : i.lo;
  if (!Number.isFinite(x)) x = -Number.MAX_VALUE;
  if (x > i.hi || (x === i.hi && i.hiOpen)) return null;
  if (x === Infinity) return null;
  return x;
}

function intersect(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  for (const x of a)
    for (const y of b) {
      const lo = Math.max(x.lo, y.lo);
      const loOpen = x.lo === y.lo ? x.loOpen || y.loOpen : lo === x.lo ? x.loOpen : y.loOpen;
      const hi = Math.min(x.hi, y.hi);
      const hiOpen = x.hi === y.hi ? x.hiOpen || y.hiOpen : hi === x.hi ? x.hiOpen : y.hiOpen;
      const i = { lo, loOpen, hi, hiOpen };
      if (least(i) !== null) out.push(i);
    }
  return out;
}

function complement(a: readonly Interval[]): Interval[] {
  let out: Interval[] = [ALL];
  for (const x of a) {
    const outside: Interval[] = [];
    if (x.lo !== -Infinity) outside.push({ lo: -Infinity, loOpen: true, hi: x.lo, hiOpen: !x.loOpen });
    if (x.hi !== Infinity) outside.push({ lo: x.hi, loOpen: !x.hiOpen, hi: Infinity, hiOpen: true });
    out = intersect(out, outside);
  }
  return out;
}

function testInterval(t: TestSpec): Interval[] | 'T' | 'F' | 'U' {
  const b = t.expected as number;
  switch (t.op) {
    case 'gt':
      return [{ lo: b, loOpen: true, hi: Infinity, hiOpen: true }];
    case 'gte':
      return [{ lo: b, loOpen: false, hi: Infinity, hiOpen: true }];
    case 'lt':
      return [{ lo: -Infinity, loOpen: true, hi: b, hiOpen: true }];
    case 'lte':
      return [{ lo: -Infinity, loOpen: true, hi: b, hiOpen: false }];
    case 'exists':
      return t.expected === true ? 'T' : 'F';
    case 'equals':
    case 'oneOf':
      return 'F'; // the values they name were tried apart
    default:
      return 'U';
  }
}

/** The numbers (outside `named`) for which every literal's block answers an allowed outcome. */
function numberSet(lits: readonly VarLiteral[]): Interval[] {
  let set: Interval[] = [ALL];
  for (const l of lits) {
    let still: Interval[] = [ALL];
    let allowed: Interval[] = [];
    for (const t of l.tests) {
      const r = testInterval(t);
      const T = r === 'T' ? [ALL] : r === 'F' || r === 'U' ? [] : r;
      const notT = r === 'T' ? [] : r === 'F' || r === 'U' ? [ALL] : complement(r);
      const failing: Outcome = r === 'U' ? 'U' : 'F';
      if (l.allowed.has(failing)) allowed = [...allowed, ...intersect(still, notT)];
      still = intersect(still, T);
      if (still.length === 0) break;
    }
    if (l.allowed.has('T')) allowed = [...allowed, ...still];
    set = intersect(set, allowed);
    if (set.length === 0) return [];
  }
  return set;
}

function numberIn(lits: readonly VarLiteral[], named: readonly unknown[]): number | null {
  const set = numberSet(lits);
  const taken = (x: number): boolean => named.some((n) => n === x);
  for (const i of set) {
    const inside = (x: number): boolean =>
      Number.isFinite(x) &&
      (x > i.lo || (x === i.lo && !i.loOpen)) &&
      (x < i.hi || (x === i.hi && !i.hiOpen)) &&
      !taken(x);
    const candidates: number[] = [];
    if (i.lo === -Infinity && i.hi === Infinity) candidates.push(0, 1);
    if (Number.isFinite(i.lo)) {
      const up = Number.isInteger(i.lo) ? i.lo + (i.loOpen ? 1 : 0) : Math.ceil(i.lo);
      candidates.push(up, up + 1, Math.ceil(i.lo) + 1);
    }
    if (Number.isFinite(i.hi)) {
      const down = Number.isInteger(i.hi) ? i.hi - (i.hiOpen ? 1 : 0) : Math.floor(i.hi);
      candidates.push(down, down - 1);
    }
    if (Number.isFinite(i.lo) && Number.isFinite(i.hi)) candidates.push((i.lo + i.hi) / 2);
    const low = least(i);
    if (low !== null) candidates.push(low, nextUp(low), nextUp(nextUp(low)));
    if (Number.isFinite(i.hi)) candidates.push(i.hi, nextDown(i.hi), nextDown(nextDown(i.hi)));
    const found = candidates.find(inside);
    if (found !== undefined) return Object.is(found, -0) ? 0 : found;
  }
  return null;
}

// ---- strings ----

/**
 * A string (outside `named`) every literal allows. The string domain is split into kinds each test answers
 * uniformly or reads through its automaton: clean paths (absolute, relative) where path tests take part,
 * well-formed text otherwise, the path "." and text `resolvePath` refuses, and ill-formed text.
 */
function stringIn(lits: readonly VarLiteral[], named: readonly unknown[]): VarAnswer {
  const tests = lits.flatMap((l) => l.tests);
  const exclude = named.filter((n): n is string => typeof n === 'string');
  const prefix = tests.some((t) => t.op === 'prefix');
  const globs = tests.filter((t) => t.op === 'glob');
  const paths = tests.filter((t) => t.op === 'path');
  const folding = [...globs, ...paths].map((t) => t.caseInsensitive);
  const mixedCase = folding.includes(true) && (folding.includes(false) || prefix);
  const allFolded = folding.length > 0 && folding.every((f) => f) && !prefix;
  const reasons: string[] = [];
  if (mixedCase)
    reasons.push(
      'case-insensitive tests beside case-sensitive ones on one argument are decided only over ASCII letters',
    );
  if (prefix && (globs.length > 0 || paths.length > 0))
    reasons.push(
      'a prefix reads the text as given and a glob or path test its NFC form; text that is not in NFC is not decided',
    );
  if (paths.length > 0 && (prefix || globs.length > 0))
    reasons.push('a path test beside a prefix or glob test on one argument is decided only for paths already resolved');
  if (paths.some((t) => t.realpath))
    reasons.push('a realpath test depends on the symbolic links of the machine that decides');
  const exact = reasons.length === 0;
  const check = (v: string): boolean => !exclude.includes(v) && holds(lits, true, v);

  const kinds: ('absolute' | 'relative' | 'raw')[] = paths.length > 0 ? ['absolute', 'relative'] : ['raw'];
  let tooLarge = false;
  for (const kind of kinds) {
    const components: Component[] = [];
    const index = new Map<string, number>();
    const component = (c: Component, key: string): number => {
      let i = index.get(key);
      if (i === undefined) {
        i = components.length;
        components.push(c);
        index.set(key, i);
      }
      return i;
    };
    const fold = (t: TestSpec): boolean => mixedCase && t.caseInsensitive;
    // Each test's outcome from its components' bits; constants for tests that answer a string alike.
    const parts = (
      t: TestSpec,
    ): { readonly comps: readonly number[]; readonly outcome: (bits: readonly boolean[]) => Outcome } => {
      if (t.op === 'prefix') {
        const i = component({ kind: 'prefix', text: t.expected as string }, `p:${String(t.expected)}`);
        return { comps: [i], outcome: (b) => (b[0] ? 'T' : 'F') };
      }
      if (t.op === 'glob' || t.op === 'path') {
        const usable = t.op === 'glob' ? t.globs : t.globs.filter((g) => g.absolute === (kind === 'absolute'));
        if (t.op === 'path' && kind === 'raw') return { comps: [], outcome: () => 'U' };
        if (usable.length === 0) return { comps: [], outcome: () => (t.op === 'path' ? 'U' : 'F') };
        const match = usable.map((g, n) =>
          component(
            { kind: 'glob', glob: g.structure, part: 'match', fold: fold(t) },
            `m:${fold(t)}:${t.op}:${n}:${JSON.stringify(t.expected)}:${t.caseInsensitive}`,
          ),
        );
        const folder = usable.map((g, n) =>
          component(
            { kind: 'glob', glob: g.structure, part: 'folder', fold: fold(t) },
            `f:${fold(t)}:${t.op}:${n}:${JSON.stringify(t.expected)}:${t.caseInsensitive}`,
          ),
        );
        const k = match.length;
        return {
          comps: [...match, ...folder],
          outcome: (b) => (b.slice(0, k).some(Boolean) ? 'T' : b.slice(k).some(Boolean) ? 'U' : 'F'),
        };
      }
      const constant: Outcome =
        t.op === 'exists' ? (t.expected === true ? 'T' : 'F') : t.op === 'equals' || t.op === 'oneOf' ? 'F' : 'U';
      return { comps: [], outcome: () => constant };
    };
    const conditions: Condition[] = lits.map((l) => {
      const ps = l.tests.map(parts);
      const comps = ps.flatMap((p) => p.comps);
      return {
        components: comps,
        allowed: l.allowed,
        outcome: allOf(ps),
      };
    });
    if (kind !== 'raw') {
      const clean = component({ kind: 'clean', absolute: kind === 'absolute' }, `clean:${kind}`);
      conditions.push({ components: [clean], allowed: new Set(['T']), outcome: (b) => (b[0] ? 'T' : 'F') });
    }
    const answer = solveStrings({
      mode: 'path',
      components,
      conditions,
      exclude,
      ...(allFolded ? { folded: true } : {}),
    });
    if (answer.status === 'sat') {
      if (check(answer.witness)) return { status: 'sat', present: true, value: answer.witness };
      reasons.push(`the string found (${JSON.stringify(answer.witness)}) does not give the outcomes the automata gave`);
    } else if (answer.status === 'too-large') tooLarge = true;
  }
  // Kinds every path test answers alike: the path ".", text resolvePath refuses, ill-formed text.
  const others = [
    ...(paths.length > 0 ? ['.', '/..', '~', '..', 'a\\b', '%41', 'C:/', '/a.', '\u0000'] : []),
    '\ud800',
    '\udfff',
    ...tests
      .filter((t) => t.op === 'prefix')
      .flatMap((t) => [`${t.expected as string}\ud800`, `${t.expected as string}\udfff`]),
  ];
  for (const v of others) if (check(v)) return { status: 'sat', present: true, value: v };
  if (tooLarge) return { status: 'unknown', reason: 'the automaton of these string tests is too large to search' };
  if (!exact) return { status: 'unknown', reason: reasons.join('; ') };
  return { status: 'unsat' };
}

// ---- tool names (the "other tools": names neither file mentions) ----

/** A selection test on a tool's name: its namespace, or its name matching one of some globs. */
export interface NameTest {
  readonly kind: 'namespace' | 'globs';
  /** namespace: the namespace; globs: the patterns (canonical). */
  readonly value: string | readonly string[];
  readonly structures: readonly GlobStructure[];
  readonly test: (name: string) => boolean;
  readonly text: string;
}

export interface NameLiteral {
  readonly tests: readonly NameTest[];
  readonly allowed: ReadonlySet<Outcome>;
}

/**
 * A canonical tool name, not among `taken`, that every literal allows; `canonicalChar` says which code
 * points a canonical name may hold (names.ts decides).
 */
export function solveName(
  lits: readonly NameLiteral[],
  taken: readonly string[],
  valid: (name: string) => boolean,
): VarAnswer {
  const components: Component[] = [];
  const conditions: Condition[] = lits.map((l) => {
    const ps = l.tests.map((t) => {
      if (t.kind === 'namespace') {
        components.push({ kind: 'prefix', text: `${t.value as string}:` });
        return { comps: [components.length - 1], outcome: (b: readonly boolean[]): Outcome => (b[0] ? 'T' : 'F') };
      }
      const start = components.length;
      for (const s of t.structures) components.push({ kind: 'glob', glob: s, part: 'match', fold: false });
      const comps = t.structures.map((_, i) => start + i);
      return { comps, outcome: (b: readonly boolean[]): Outcome => (b.some(Boolean) ? 'T' : 'F') };
    });
    return {
      components: ps.flatMap((p) => p.comps),
      allowed: l.allowed,
      outcome: allOf(ps),
    };
  });
  const answer = solveStrings({
    mode: 'names',
    components,
    conditions,
    exclude: [...taken, ''],
    folded: true,
    accept: (cp) => valid(String.fromCodePoint(cp)),
  });
  if (answer.status === 'too-large')
    return { status: 'unknown', reason: 'the automaton of these name globs is too large to search' };
  if (answer.status === 'unsat') return { status: 'unsat' };
  const name = answer.witness;
  const ok =
    valid(name) &&
    !taken.includes(name) &&
    lits.every((l) => {
      let o: Outcome = 'T';
      for (const t of l.tests)
        if (!t.test(name)) {
          o = 'F';
          break;
        }
      return l.allowed.has(o);
    });
  return ok
    ? { status: 'sat', present: true, value: name }
    : {
        status: 'unknown',
        reason: `the tool name found (${JSON.stringify(name)}) is not canonical or does not select as computed`,
      };
}

/** Tags a tool carries (its own, where the file does not describe it): `tags` any-of tests. */
export interface TagLiteral {
  readonly any: readonly string[];
  readonly allowed: 'T' | 'F';
}

/** The fewest tags that every literal allows, or null: a tag set is exact, no search. */
export function solveTags(lits: readonly TagLiteral[]): string[] | null {
  const banned = new Set(lits.filter((l) => l.allowed === 'F').flatMap((l) => l.any));
  const chosen = new Set<string>();
  for (const l of lits) {
    if (l.allowed !== 'T' || l.any.some((t) => chosen.has(t))) continue;
    const pick = l.any.find((t) => !banned.has(t));
    if (pick === undefined) return null;
    chosen.add(pick);
  }
  return [...chosen].sort();
}

/** A condition's outcome from its tests' parts, in order: the first part's outcome that is not 'T', else 'T'. */
function allOf(
  ps: readonly { readonly comps: readonly number[]; readonly outcome: (bits: readonly boolean[]) => Outcome }[],
): (bits: readonly boolean[]) => Outcome {
  return (bits) => {
    let at = 0;
    for (const p of ps) {
      const o = p.outcome(bits.slice(at, at + p.comps.length));
      at += p.comps.length;
      if (o !== 'T') return o;
    }
    return 'T';
  };
}
