/**
 * Argument conditions of policy-file rules: equals, oneOf, prefix, glob, path, numeric comparisons and
 * exists. Globs are compiled by picomatch (no user regular expressions, so no unbounded backtracking);
 * paths are resolved (`.` and `..`) before they are matched.
 *
 * Every test answers `true` (holds), `false` (does not hold) or a string: the argument is present but
 * cannot be judged (a path that is not a string, climbs above its root, or is encoded). A rule that
 * meets such an argument throws, and the core gate denies the call (`by: 'rule_error'`) whatever the
 * rule's result: an argument the policy cannot read safely never gets a call allowed, and never slips
 * past a deny rule either.
 */
// The POSIX build: the same matching on every platform (the default export switches to Windows rules on win32).
import picomatch from 'picomatch/posix.js';
import { describe } from '../names.js';

/* The glob options used everywhere: `dot` so that `/data/**` also covers `/data/.env` (a deny rule must not miss hidden files); no negation or extglobs, so a pattern means what it reads. */
// (Not exported, and typed by inference, so the published .d.ts files need no picomatch types.)
const GLOB_OPTIONS = Object.freeze({ dot: true, nonegate: true, noextglob: true, strictSlashes: false });

/** A compiled glob: the pattern as written and its matcher. */
export interface Glob {
  readonly pattern: string;
  readonly test: (input: string) => boolean;
}

/** Compiles a glob, or throws with what is wrong with it. */
export function compileGlob(pattern: string): Glob {
  const test = picomatch(pattern, GLOB_OPTIONS);
  return { pattern, test: (input) => test(input) };
}

// A tool name is a flat string, not a path: `*` and `?` must cross a `/` in it ("github:*" must select
// "github:repos/delete", or a deny rule would miss it). Slashes are swapped for a private-use character
// on both sides, so picomatch sees no path separators at all.
const NAME_SLASH = '\uE000';

/** Compiles a glob over tool names (canonical form), where `/` is an ordinary character. */
export function compileNameGlob(pattern: string): Glob {
  const test = picomatch(pattern.replaceAll('/', NAME_SLASH), GLOB_OPTIONS);
  return { pattern, test: (name) => test(name.replaceAll('/', NAME_SLASH)) };
}

/** True when `pattern` holds glob syntax (else it is an exact name). */
export function isGlob(pattern: string): boolean {
  return picomatch.scan(pattern, GLOB_OPTIONS).isGlob;
}

/** The outcome of resolving a path argument. */
export type ResolvedPath =
  | { readonly ok: true; readonly path: string; readonly problem?: never }
  | { readonly ok: false; readonly problem: string; readonly path?: never };

// Control characters (NUL included) end or reshape a path in the tool's hands; percent-escapes and
// backslashes may be decoded or treated as separators after the policy looked at the raw text.
const CONTROL = /\p{Cc}/u;
const PERCENT_ESCAPE = /%[0-9A-Fa-f]{2}/;
// "file:///etc/passwd" or "C:/Windows": the tool may read it as a URL or a drive, not as the relative path it looks like.
const URL_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/**
 * Resolves `.` and `..` in a path argument (POSIX rules), refusing what cannot be judged safely: a value
 * that is not a non-empty string; control characters (NUL); backslashes; percent-escapes; a leading `~`;
 * a leading URL scheme or drive (`file:`, `C:`); and a `..` that climbs above the root of an absolute
 * path or above the start of a relative one.
 *
 * @example
 * resolvePath('/data/../etc/passwd') // { ok: true, path: '/etc/passwd' }
 * resolvePath('/../etc/passwd')      // { ok: false, problem: '... climbs above the root' }
 */
export function resolvePath(value: unknown): ResolvedPath {
  if (typeof value !== 'string') return { ok: false, problem: `a path must be a string, got ${describe(value)}` };
  const quoted = describe(value);
  if (value === '') return { ok: false, problem: 'the path is empty' };
  if (CONTROL.test(value)) return { ok: false, problem: `the path ${quoted} holds a control character (such as NUL)` };
  if (value.includes('\\')) return { ok: false, problem: `the path ${quoted} holds a backslash` };
  if (PERCENT_ESCAPE.test(value)) return { ok: false, problem: `the path ${quoted} holds a percent-escape` };
  if (value.startsWith('~'))
    return { ok: false, problem: `the path ${quoted} starts with ~ (home directories are not resolved)` };
  if (URL_SCHEME.test(value))
    return {
      ok: false,
      problem: `the path ${quoted} starts like a URL or drive (${value.slice(0, value.indexOf(':') + 1)})`,
    };
  const absolute = value.startsWith('/');
  const out: string[] = [];
  for (const segment of value.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (out.length === 0) {
        return {
          ok: false,
          problem: `the path ${quoted} climbs above ${absolute ? 'the root' : 'its starting directory'}`,
        };
      }
      out.pop();
    } else {
      out.push(segment);
    }
  }
  const path = (absolute ? '/' : '') + out.join('/');
  return { ok: true, path: path === '' ? '.' : path };
}

/** Reads `a.b.c` from the arguments, through own properties of plain objects only. */
export function argumentAt(
  params: Readonly<Record<string, unknown>>,
  arg: string,
): { readonly present: boolean; readonly value: unknown } {
  let current: unknown = params;
  for (const key of arg.split('.')) {
    if (typeof current !== 'object' || current === null || Array.isArray(current) || !Object.hasOwn(current, key)) {
      return { present: false, value: undefined };
    }
    current = (current as Record<string, unknown>)[key];
  }
  return { present: current !== undefined, value: current };
}

/** Equality of JSON values (objects by keys, arrays by position). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => jsonEqual(item, other[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every(
    (k) => Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}

/** The operators of a condition, in the order they are tested. */
export const CONDITION_OPS = ['exists', 'equals', 'oneOf', 'prefix', 'glob', 'path', 'gt', 'gte', 'lt', 'lte'] as const;
export type ConditionOp = (typeof CONDITION_OPS)[number];

/** One test of one argument. */
export interface ConditionTest {
  readonly arg: string;
  readonly op: ConditionOp;
  /** The value as written in the policy file. */
  readonly expected: unknown;
  /** true, false, or why the argument cannot be judged. */
  readonly test: (present: boolean, value: unknown) => boolean | string;
  /** Words for the trace: what the test checks. */
  readonly text: string;
}

/** How one test fared, for explanations. */
export interface ConditionTrace {
  readonly arg: string;
  readonly op: ConditionOp;
  readonly expected: unknown;
  readonly actual: unknown;
  readonly outcome: 'held' | 'failed' | 'unjudgeable' | 'not_reached';
  readonly detail: string;
}

function patternsOf(value: unknown): string[] {
  return typeof value === 'string' ? [value] : (value as string[]);
}

/**
 * Compiles the tests of one condition (`{ gt: 100, lt: 1000 }` is two tests). Throws an Error naming
 * the operator when a glob does not compile or a path pattern holds `.` or `..` segments.
 */
export function compileCondition(arg: string, condition: Readonly<Record<string, unknown>>): ConditionTest[] {
  const tests: ConditionTest[] = [];
  for (const op of CONDITION_OPS) {
    if (!Object.hasOwn(condition, op)) continue;
    const expected = condition[op];
    tests.push(compileTest(arg, op, expected));
  }
  return tests;
}

function compileTest(arg: string, op: ConditionOp, expected: unknown): ConditionTest {
  const make = (text: string, test: ConditionTest['test']): ConditionTest => ({ arg, op, expected, text, test });
  switch (op) {
    case 'exists':
      return make(expected ? 'is present' : 'is absent', (present) => present === expected);
    case 'equals':
      return make(`equals ${JSON.stringify(expected)}`, (present, value) => present && jsonEqual(value, expected));
    case 'oneOf': {
      const list = expected as unknown[];
      return make(
        `is one of ${JSON.stringify(list)}`,
        (present, value) => present && list.some((item) => jsonEqual(value, item)),
      );
    }
    case 'prefix': {
      const prefix = expected as string;
      return make(`starts with ${JSON.stringify(prefix)}`, (present, value) => {
        if (!present) return false;
        if (typeof value !== 'string')
          return `argument ${JSON.stringify(arg)} must be a string to test a prefix, got ${describe(value)}`;
        return value.startsWith(prefix);
      });
    }
    case 'glob': {
      const globs = patternsOf(expected).map(compileGlob);
      return make(`matches ${globs.map((g) => g.pattern).join(' or ')}`, (present, value) => {
        if (!present) return false;
        if (typeof value !== 'string')
          return `argument ${JSON.stringify(arg)} must be a string to match a glob, got ${describe(value)}`;
        return globs.some((g) => g.test(value));
      });
    }
    case 'path': {
      const globs = patternsOf(expected).map((pattern) => {
        if (pattern.split('/').some((s) => s === '.' || s === '..')) {
          throw new Error(
            `path pattern ${JSON.stringify(pattern)} holds a "." or ".." segment; write the resolved path`,
          );
        }
        return compileGlob(pattern);
      });
      const absolute = globs.filter((g) => g.pattern.startsWith('/'));
      const relative = globs.filter((g) => !g.pattern.startsWith('/'));
      return make(`is a path within ${globs.map((g) => g.pattern).join(' or ')}`, (present, value) => {
        if (!present) return false;
        const resolved = resolvePath(value);
        if (!resolved.ok) return `argument ${JSON.stringify(arg)}: ${resolved.problem}`;
        // A relative path against absolute patterns (or the reverse) depends on a working directory the
        // policy cannot see: it might land inside a denied tree, so it cannot be judged.
        const comparable = resolved.path.startsWith('/') ? absolute : relative;
        if (comparable.length === 0) {
          return `argument ${JSON.stringify(arg)}: the ${resolved.path.startsWith('/') ? 'absolute' : 'relative'} path ${describe(value)} cannot be compared with ${resolved.path.startsWith('/') ? 'relative' : 'absolute'} patterns`;
        }
        return comparable.some((g) => g.test(resolved.path));
      });
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const bound = expected as number;
      const sign = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[op];
      return make(`${sign} ${bound}`, (present, value) => {
        if (!present) return false;
        if (typeof value !== 'number' || !Number.isFinite(value))
          return `argument ${JSON.stringify(arg)} must be a number to compare, got ${describe(value)}`;
        return op === 'gt'
          ? value > bound
          : op === 'gte'
            ? value >= bound
            : op === 'lt'
              ? value < bound
              : value <= bound;
      });
    }
  }
}

/** Runs tests in order: true when all hold, false at the first that fails, a string at the first that cannot judge. */
export function runTests(tests: readonly ConditionTest[], params: Readonly<Record<string, unknown>>): boolean | string {
  for (const t of tests) {
    const { present, value } = argumentAt(params, t.arg);
    const verdict = t.test(present, value);
    if (verdict !== true) return verdict;
  }
  return true;
}

/** The same walk as {@link runTests}, reporting every test. */
export function traceTests(
  tests: readonly ConditionTest[],
  params: Readonly<Record<string, unknown>>,
): ConditionTrace[] {
  const out: ConditionTrace[] = [];
  let stopped = false;
  for (const t of tests) {
    const { present, value } = argumentAt(params, t.arg);
    if (stopped) {
      out.push({
        arg: t.arg,
        op: t.op,
        expected: t.expected,
        actual: value,
        outcome: 'not_reached',
        detail: `${t.arg} ${t.text}: not tested`,
      });
      continue;
    }
    const verdict = t.test(present, value);
    const shown = present ? describe(value) : '(absent)';
    let detail = `${t.arg} ${t.text}: ${shown}`;
    if (t.op === 'path' && present) {
      const resolved = resolvePath(value);
      if (resolved.ok && resolved.path !== value) detail += ` resolves to ${JSON.stringify(resolved.path)}`;
    }
    if (verdict === true)
      out.push({
        arg: t.arg,
        op: t.op,
        expected: t.expected,
        actual: value,
        outcome: 'held',
        detail: `${detail}, holds`,
      });
    else if (verdict === false) {
      out.push({
        arg: t.arg,
        op: t.op,
        expected: t.expected,
        actual: value,
        outcome: 'failed',
        detail: `${detail}, does not hold`,
      });
      stopped = true;
    } else {
      out.push({ arg: t.arg, op: t.op, expected: t.expected, actual: value, outcome: 'unjudgeable', detail: verdict });
      stopped = true;
    }
  }
  return out;
}
