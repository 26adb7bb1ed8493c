/**
 * Argument conditions of policy-file rules: equals, oneOf, prefix, glob, path, numeric comparisons and
 * exists. Globs are compiled to automata run without backtracking (glob.ts), so a match costs time
 * linear in the model-chosen input; there are no user regular expressions. Paths are resolved (`.` and
 * `..`), brought to NFC (and case-folded with `caseInsensitive`), and with `realpath` their symbolic
 * links are resolved on this machine's file system, before they are matched.
 *
 * Every test answers `true` (holds), `false` (does not hold) or a string: the argument is present but
 * cannot be judged (a path that is not a string, climbs above its root, or is encoded). A rule that
 * meets such an argument throws, and the core gate denies the call (`by: 'rule_error'`) whatever the
 * rule's result: an argument the policy cannot read safely never gets a call allowed, and never slips
 * past a deny rule either.
 */
import { describe } from '../names.js';
import { caseFold } from '../unicode/case-fold.js';
import { compileGlobMatcher } from './glob.js';
import { physicalPath, resolvePath, type ResolvedPath } from './paths.js';

/** A compiled glob: the pattern as written and its matcher (linear in the input: see glob.ts). */
export interface Glob {
  readonly pattern: string;
  readonly test: (input: string) => boolean;
  /** For a pattern ending in `/**`: true when the input is that folder itself, which the pattern leaves out. */
  readonly isFolderOf?: (input: string) => boolean;
}

/** Compiles a glob over strings and paths (`*` stays within a `/`-separated segment), or throws with what is wrong. */
export function compileGlob(pattern: string): Glob {
  const matcher = compileGlobMatcher(pattern);
  return { pattern, test: matcher.test, isFolderOf: matcher.isFolderOf };
}

/**
 * Compiles a glob over tool names (canonical form). A tool name is a flat string, not a path: `*` and
 * `?` cross a `/` in it ("github:*" must select "github:repos/delete", or a deny rule would miss it).
 */
export function compileNameGlob(pattern: string): Glob {
  const matcher = compileGlobMatcher(pattern, { names: true });
  return { pattern, test: matcher.test };
}

const GLOB_SYNTAX = /[*?[{\\]/;

/** True when `pattern` holds glob syntax (else it is an exact name). A pattern that does not compile counts as a glob. */
export function isGlob(pattern: string): boolean {
  // Without `*`, `?`, `[`, `{` or `\` a name pattern compiles to one literal (glob.ts reads no other
  // character as syntax): known without building its matcher (an exact name per rule, issue 25).
  if (!GLOB_SYNTAX.test(pattern)) return false;
  try {
    return compileGlobMatcher(pattern, { names: true }).isGlob;
  } catch {
    return true;
  }
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
  /** Words for the trace: what the test checks (with its modifiers: two tests of one text test alike). */
  readonly text: string;
  /** For a path test: the path it compares (resolved, normalised, links resolved with `realpath`), for traces. */
  readonly subject?: (value: unknown) => string | null;
  /** How a path or glob test compares: its modifiers (`caseInsensitive`, `realpath`) in words; '' for none. */
  readonly mode?: string;
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

/** A `path` or `glob` test's patterns: one string or a list. */
export function patternsOf(value: unknown): string[] {
  return typeof value === 'string' ? [value] : (value as string[]);
}

/** How a condition's `path` and `glob` tests compare. */
export interface CompareOptions {
  /** Case-fold both sides (full Unicode case folding): for upstreams on macOS or Windows file systems. */
  readonly caseInsensitive: boolean;
  /** Resolve symbolic links on this machine before matching a path; refuse what cannot be resolved. */
  readonly realpath: boolean;
}

/**
 * Compiles the tests of one condition (`{ gt: 100, lt: 1000 }` is two tests). Throws an Error naming
 * the operator when a glob does not compile or a path pattern holds `.` or `..` segments, or when a
 * modifier (`caseInsensitive`, `realpath`) has no test to modify.
 */
export function compileCondition(arg: string, condition: Readonly<Record<string, unknown>>): ConditionTest[] {
  const options: CompareOptions = {
    caseInsensitive: condition['caseInsensitive'] === true,
    realpath: condition['realpath'] === true,
  };
  if (
    Object.hasOwn(condition, 'caseInsensitive') &&
    !Object.hasOwn(condition, 'path') &&
    !Object.hasOwn(condition, 'glob')
  )
    throw new Error('caseInsensitive applies to a path or glob test; give one');
  if (Object.hasOwn(condition, 'realpath') && !Object.hasOwn(condition, 'path'))
    throw new Error('realpath applies to a path test; give one');
  const tests: ConditionTest[] = [];
  for (const op of CONDITION_OPS) {
    if (!Object.hasOwn(condition, op)) continue;
    const expected = condition[op];
    tests.push(compileTest(arg, op, expected, options));
  }
  if (tests.length === 0)
    throw new Error('expected at least one test: exists, equals, oneOf, prefix, glob, path, gt, gte, lt or lte');
  return tests;
}

/**
 * NFC, and case-folded when asked: what both sides of a path or glob comparison are brought to. Folded
 * after upper-casing: full case folding keeps the dotless ı (U+0131) apart from i (its folding is
 * Turkic-only), but the up-case tables of NTFS and exFAT map it to I, so Windows opens `prıvate` as
 * `private`; upper-casing first merges them (and changes nothing else the folding does not already merge).
 */
export function comparable(text: string, options: CompareOptions): string {
  const nfc = text.normalize('NFC');
  return options.caseInsensitive ? caseFold(nfc.toUpperCase().normalize('NFC')).normalize('NFC') : nfc;
}

function modeText(options: CompareOptions): string {
  const modes = [
    ...(options.caseInsensitive ? ['ignoring case'] : []),
    ...(options.realpath ? ['with symbolic links resolved'] : []),
  ];
  return modes.length === 0 ? '' : ` (${modes.join(', ')})`;
}

/**
 * The path a path test compares for `value`: resolved (`.`, `..`), NFC, with `realpath` its links
 * resolved on this file system, case-folded with `caseInsensitive`; or why it cannot be judged.
 */
function pathSubject(value: unknown, options: CompareOptions): ResolvedPath {
  const resolved = resolvePath(value);
  if (!resolved.ok || !options.realpath)
    return resolved.ok ? { ok: true, path: comparable(resolved.path, options) } : resolved;
  const raw = value as string;
  if (!resolved.path.startsWith('/'))
    return {
      ok: false,
      problem: `the relative path ${describe(raw)} cannot have its links resolved (realpath needs an absolute path)`,
    };
  const real = physicalPath(resolved.path);
  if (!real.ok) return real;
  // A ".." after a symbolic link climbs out of the link's target in the kernel but out of the link's
  // folder in a tool that resolves ".." first (as the MCP filesystem server does): where they differ,
  // which one the upstream takes cannot be known here.
  // (Where the kernel's walk fails, a tool taking the kernel's way fails too: only the other way is left.)
  if (raw.split('/').includes('..')) {
    const kernel = physicalPath(raw.normalize('NFC'));
    if (kernel.ok && kernel.path !== real.path)
      return {
        ok: false,
        problem: `the path ${describe(raw)} has a ".." after a symbolic link: it leads to ${JSON.stringify(kernel.path)} or ${JSON.stringify(real.path)} depending on the tool`,
      };
  }
  return { ok: true, path: comparable(real.path, options) };
}

function compileTest(arg: string, op: ConditionOp, expected: unknown, options: CompareOptions): ConditionTest {
  const mode = modeText(options);
  const make = (text: string, test: ConditionTest['test'], subject?: ConditionTest['subject']): ConditionTest => ({
    arg,
    op,
    expected,
    text,
    test,
    ...(subject ? { subject } : {}),
    ...(mode !== '' && (op === 'path' || op === 'glob') ? { mode } : {}),
  });
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
      const globs = patternsOf(expected).map((pattern) => ({ ...compileGlob(comparable(pattern, options)), pattern }));
      return make(`matches ${globs.map((g) => g.pattern).join(' or ')}${modeText(options)}`, (present, value) => {
        if (!present) return false;
        if (typeof value !== 'string')
          return `argument ${JSON.stringify(arg)} must be a string to match a glob, got ${describe(value)}`;
        if (!value.isWellFormed())
          return `argument ${JSON.stringify(arg)} holds an unpaired surrogate; it cannot be matched`;
        return globMatch(arg, globs, comparable(value, options), value);
      });
    }
    case 'path': {
      const globs = patternsOf(expected).map((pattern) => {
        if (pattern.split('/').some((s) => s === '.' || s === '..')) {
          throw new Error(
            `path pattern ${JSON.stringify(pattern)} holds a "." or ".." segment; write the resolved path`,
          );
        }
        return { ...compileGlob(comparable(pattern, options)), pattern };
      });
      const absolute = globs.filter((g) => g.pattern.startsWith('/'));
      const relative = globs.filter((g) => !g.pattern.startsWith('/'));
      const subject = (value: unknown): ResolvedPath => pathSubject(value, options);
      return make(
        `is a path within ${globs.map((g) => g.pattern).join(' or ')}${modeText(options)}`,
        (present, value) => {
          if (!present) return false;
          const resolved = subject(value);
          if (!resolved.ok) return `argument ${JSON.stringify(arg)}: ${resolved.problem}`;
          // A relative path against absolute patterns (or the reverse) depends on a working directory the
          // policy cannot see: it might land inside a denied tree, so it cannot be judged.
          const candidates = resolved.path.startsWith('/') ? absolute : relative;
          if (candidates.length === 0) {
            return `argument ${JSON.stringify(arg)}: the ${resolved.path.startsWith('/') ? 'absolute' : 'relative'} path ${describe(value)} cannot be compared with ${resolved.path.startsWith('/') ? 'relative' : 'absolute'} patterns`;
          }
          return globMatch(arg, candidates, resolved.path, value);
        },
        (value) => {
          const resolved = subject(value);
          return resolved.ok ? resolved.path : null;
        },
      );
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

/**
 * True when a glob matches; "cannot judge" when none does but the input is the folder a `dir/**` pattern
 * covers the contents of (`write_file` on `inbox` is not a file in `inbox/**`, and a deny on `secret/**`
 * must not let `secret` itself through): list the folder as a pattern of its own to cover it.
 */
function globMatch(arg: string, globs: readonly Glob[], input: string, value: unknown): boolean | string {
  if (globs.some((g) => g.test(input))) return true;
  const folder = globs.find((g) => g.isFolderOf?.(input));
  if (folder)
    return `argument ${JSON.stringify(arg)}: ${describe(value)} is the folder whose contents ${JSON.stringify(folder.pattern)} covers, not one of them; list the folder itself as a pattern to cover it`;
  return false;
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
    if (t.subject && present) {
      const compared = t.subject(value);
      if (compared !== null && compared !== value) detail += ` resolves to ${JSON.stringify(compared)}`;
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
