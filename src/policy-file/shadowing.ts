/**
 * Lint's shadowing check: whether an earlier rule matches every call a later one does (`covers`), proved
 * conservatively: names, namespace and tags by selection, conditions test by test (`implied`). What it
 * cannot prove is "not covered", never a guess; a property test runs random pairs against the real matchers.
 */
import { jsonEqual, patternsOf, type ConditionTest } from './matchers.js';
import type { PolicyRuleInfo, PolicySet } from './policy-set.js';

/** True when every call `later` matches, `earlier` matches too. Conservative: false when unsure. */
export function covers(earlier: PolicyRuleInfo, later: PolicyRuleInfo, set: PolicySet): boolean {
  // Conditions: each of the earlier rule's tests must hold for every value the later rule accepts.
  if (
    !earlier.tests.every((a) =>
      implied(
        a,
        later.tests.filter((b) => b.arg === a.arg),
      ),
    )
  )
    return false;
  // Names.
  const earlierNames = earlier.exact.length + earlier.globs.length > 0;
  const laterNames = later.exact.length + later.globs.length > 0;
  if (earlierNames) {
    if (!laterNames) return false;
    if (!later.exact.every((n) => earlier.exact.includes(n) || earlier.globs.some((g) => g.test(n)))) return false;
    if (
      !later.globs.every((g) =>
        earlier.globs.some(
          (e) => e.pattern === g.pattern || e.pattern === '**' || (e.pattern === '*' && !g.pattern.includes('/')),
        ),
      )
    )
      return false;
  }
  // Namespace.
  if (earlier.namespace !== null && later.namespace !== earlier.namespace) {
    if (
      later.globs.length > 0 ||
      later.exact.length === 0 ||
      !later.exact.every((n) => n.startsWith(`${earlier.namespace}:`))
    )
      return false;
  }
  // Tags: the later rule's tools must carry one of the earlier rule's tags.
  if (earlier.tags !== null) {
    const laterTagsCovered = later.tags !== null && later.tags.every((t) => earlier.tags!.includes(t));
    if (!laterTagsCovered) {
      if (later.globs.length > 0 || later.exact.length === 0) return false;
      const tools = new Map(set.tools.map((t) => [t.canonicalName, t]));
      if (!later.exact.every((n) => [...(tools.get(n)?.metadata.allTags ?? [])].some((t) => earlier.tags!.includes(t))))
        return false;
    }
  }
  return true;
}

/**
 * True when test `a` holds for every value of its argument that passes all of `tests` (the later rule's
 * tests of the same argument). Proved only where it can be: the same test; `exists: true` after any
 * test that needs the argument present; one value (`equals`, or a closed one-point range) or a finite
 * list (`oneOf`) — `a` is then simply run on each; a number range inside `a`'s bound; a longer `prefix`;
 * a `path` within a literal directory's `/**`. Anything else is "not proved" (false), never a guess.
 */
export function implied(a: ConditionTest, given: readonly ConditionTest[]): boolean {
  // A path or glob test compared another way (caseInsensitive, realpath) is not the same test.
  const tests = given.filter((b) => (b.op !== 'path' && b.op !== 'glob') || (b.mode ?? '') === (a.mode ?? ''));
  if (tests.length === 0) return false;
  if (tests.some((b) => b.op === a.op && jsonEqual(a.expected, b.expected))) return true;
  if (tests.some((b) => b.op === 'exists' && b.expected === false)) return false; // absent: only the same test holds
  if (a.op === 'exists') return a.expected === true; // every other test fails on an absent argument
  const passes = (v: unknown): boolean => tests.every((b) => b.test(true, v) === true);
  // A finite set of values: run `a` on each that the later rule accepts (none accepted proves nothing).
  const finite = values(tests);
  if (finite !== null) {
    const accepted = finite.filter(passes);
    return accepted.length > 0 && accepted.every((v) => a.test(true, v) === true);
  }
  if (a.op === 'gt' || a.op === 'gte' || a.op === 'lt' || a.op === 'lte') {
    const range = rangeOf(tests);
    // No range, or an empty one (that rule never matches: reported as never-matches, not as shadowed).
    if (range === null || range.lo > range.hi || (range.lo === range.hi && (range.loOpen || range.hiOpen)))
      return false;
    const bound = a.expected as number;
    if (a.op === 'gt') return range.lo > bound || (range.lo === bound && range.loOpen);
    if (a.op === 'gte') return range.lo >= bound;
    if (a.op === 'lt') return range.hi < bound || (range.hi === bound && range.hiOpen);
    return range.hi <= bound;
  }
  if (a.op === 'prefix')
    return tests.some((b) => b.op === 'prefix' && (b.expected as string).startsWith(a.expected as string));
  if (a.op === 'path') {
    const outer = patternsOf(a.expected);
    return tests.some(
      (b) => b.op === 'path' && patternsOf(b.expected).every((q) => outer.some((p) => pathWithin(q, p))),
    );
  }
  return false;
}

/** The values the tests allow when they name them (`equals`, `oneOf`, a closed one-point range), else null. */
function values(tests: readonly ConditionTest[]): unknown[] | null {
  const equals = tests.find((t) => t.op === 'equals');
  if (equals) return [equals.expected];
  const oneOf = tests.find((t) => t.op === 'oneOf');
  if (oneOf) return oneOf.expected as unknown[];
  const range = rangeOf(tests);
  if (range && range.lo === range.hi && !range.loOpen && !range.hiOpen) return [range.lo];
  return null;
}

/** The interval of finite numbers the numeric tests allow, or null when there is no numeric test. */
function rangeOf(tests: readonly ConditionTest[]): { lo: number; loOpen: boolean; hi: number; hiOpen: boolean } | null {
  let lo = -Infinity;
  let loOpen = true;
  let hi = Infinity;
  let hiOpen = true;
  let any = false;
  for (const t of tests) {
    const v = t.expected as number;
    if (t.op === 'gt' || t.op === 'gte') {
      any = true;
      if (v > lo || (v === lo && t.op === 'gt')) [lo, loOpen] = [v, t.op === 'gt'];
    } else if (t.op === 'lt' || t.op === 'lte') {
      any = true;
      if (v < hi || (v === hi && t.op === 'lt')) [hi, hiOpen] = [v, t.op === 'lt'];
    }
  }
  return any ? { lo, loOpen, hi, hiOpen } : null;
}

// A directory written plainly: no glob syntax, no escapes, nothing picomatch could read as special.
const PLAIN_DIRECTORY = /^\/?[A-Za-z0-9._~@+=,-]+(?:\/[A-Za-z0-9._~@+=,-]+)*$/;

/**
 * True when every resolved path matching pattern `q` also matches pattern `p`: the same pattern, or
 * `p` is `DIR/**` for a plain directory DIR and `q` starts with `DIR/` (a resolved path has no `.` or
 * `..` segments, so whatever `q` matches lies under DIR, and `DIR/**` takes all of it, dot files too).
 */
function pathWithin(q: string, p: string): boolean {
  if (q === p) return true;
  if (!p.endsWith('/**')) return false;
  const dir = p.slice(0, -3);
  return PLAIN_DIRECTORY.test(dir) && !dir.split('/').some((s) => s === '.' || s === '..') && q.startsWith(`${dir}/`);
}
