/**
 * Glob matching in time linear in the input, for tool names and argument values chosen by a model.
 *
 * A backtracking regular expression (what glob libraries compile to) can take polynomial or exponential
 * time on a crafted input: `/logs/*-*-*-*.log` against `/logs/` + 400 dashes blocked the event loop for
 * seconds. Here a pattern is a small automaton run as a set of states (Thompson's construction, no
 * backtracking): each input character (or path segment) moves every live state at most one step, so a
 * match costs O(input length × pattern length), and the pattern is the policy author's, not the model's.
 *
 * Syntax (the subset of glob that policy files use):
 * - `*` any run of characters within one path segment (not `/`); `?` one character (not `/`);
 * - `[abc]`, `[a-z]`, `[!a-z]` / `[^a-z]` one character of (or not of) a set; never `/`;
 * - `**` as a whole segment: any number of segments (`/data/**\/x` covers `/data/x`); at the end of a
 *   pattern (`/data/**`) one or more segments: the folder's contents, not the folder itself;
 * - `{a,b}` alternatives (nesting allowed) and `{1..5}` / `{a..e}` ranges, at most 256 expansions;
 * - `\x` the character x itself.
 * `*`, `?`, `**` and classes never match a `.` or `..` segment, but do match names starting with a dot
 * (`/home/**` covers `/home/ann/.ssh`: a deny rule must not miss hidden files). No negation (`!x` is the
 * name "!x"), no extglobs (`@(a|b)` is literal). One trailing `/` is ignored on both sides.
 *
 * In name mode (tool names) `/` is an ordinary character: the whole name is one segment, `*` and `**`
 * cross everything.
 */

/** One character test of a wild segment (exported for the policy diff's automata: src/policy-file/diff/). */
export type GlobToken =
  | { readonly kind: 'char'; readonly cp: number }
  | { readonly kind: 'any' }
  | { readonly kind: 'star' }
  | { readonly kind: 'class'; readonly negated: boolean; readonly ranges: readonly number[] };

type Token = GlobToken;

/** One path segment of a compiled glob (exported for the policy diff's automata: src/policy-file/diff/). */
export type GlobSegment =
  | { readonly kind: 'literal'; readonly text: string }
  | { readonly kind: 'wild'; readonly tokens: readonly Token[]; readonly dotted: boolean }
  /** `**`: zero or more segments. */
  | { readonly kind: 'globstar' }
  /** Exactly one segment, whatever it holds but `.` or `..` (the first of a trailing `/**`). */
  | { readonly kind: 'one' };
type Segment = GlobSegment;

/** A compiled glob: whether an input matches, in time linear in the input. */
export interface GlobMatcher {
  readonly pattern: string;
  /** True when `input` matches. */
  test(input: string): boolean;
  /** True when the pattern has glob syntax (else it matches exactly one string). */
  readonly isGlob: boolean;
  /**
   * For a path pattern ending in `/**` (or `/*`): true when `input` is the folder itself (`/data` for `/data/**`),
   * which the pattern's contents-only reading leaves out. Always false otherwise.
   */
  isFolderOf(input: string): boolean;
}

/** The most alternatives `{…}` may expand to. */
export const MAX_EXPANSIONS = 256;

let steps = 0;
/** @internal The automaton steps taken so far (tests bound the work a match does). */
export function globSteps(): number {
  return steps;
}

/**
 * Compiles a glob. `names: true` compiles a tool-name glob (no separators). Throws an Error saying what
 * is wrong (a POSIX class, too many expansions).
 */
export function compileGlobMatcher(pattern: string, options: { readonly names?: boolean } = {}): GlobMatcher {
  if (typeof pattern !== 'string') throw new TypeError('a glob must be a string');
  const names = options.names === true;
  const compiled = expand(stripSlash(pattern, names)).map((alt) => compileAlternative(alt, names));
  const alternatives = compiled.map((c) => c.segments);
  const isGlob = alternatives.length > 1 || alternatives.some((a) => a.some((s) => s.kind !== 'literal'));
  const folders = compiled.flatMap((c) => (c.folder ? [c.folder] : []));
  return {
    pattern,
    isGlob,
    test: (input) => {
      const segments = split(stripSlash(input, names), names);
      return alternatives.some((alt) => run(alt, segments));
    },
    isFolderOf: (input) => {
      if (folders.length === 0) return false;
      const segments = split(stripSlash(input, names), names);
      return folders.some((alt) => run(alt, segments));
    },
  };
}

/**
 * The automaton `compileGlobMatcher` runs, as data: each alternative's segments, and the segments of the
 * folders a trailing `/**` leaves out. The policy diff (src/policy-file/diff/) builds product automata
 * from it, so that it reasons about exactly the language the matcher accepts.
 */
export interface GlobStructure {
  readonly names: boolean;
  readonly alternatives: readonly (readonly GlobSegment[])[];
  readonly folders: readonly (readonly GlobSegment[])[];
}

/** The structure of a glob (see {@link GlobStructure}); throws as {@link compileGlobMatcher} does. */
export function globStructure(pattern: string, options: { readonly names?: boolean } = {}): GlobStructure {
  const names = options.names === true;
  const compiled = expand(stripSlash(pattern, names)).map((alt) => compileAlternative(alt, names));
  return {
    names,
    alternatives: compiled.map((c) => c.segments),
    folders: compiled.flatMap((c) => (c.folder ? [c.folder] : [])),
  };
}

function stripSlash(text: string, names: boolean): string {
  return !names && text.length > 1 && text.endsWith('/') && !text.endsWith('\\/') ? text.slice(0, -1) : text;
}

function split(input: string, names: boolean): string[] {
  // The root "/" is the folder with no name below it: one empty segment, as "/a" is ["", "a"].
  return names ? [input] : input === '/' ? [''] : input.split('/');
}

// ---- brace expansion ----

/** Expands `{a,b}` and `{1..3}` (outermost first, recursively), leaving other braces literal (escaped). */
function expand(pattern: string): string[] {
  const out: string[] = [];
  const pending = [pattern];
  while (pending.length > 0) {
    const current = pending.pop()!;
    const brace = findBrace(current);
    if (!brace) {
      out.push(current);
      if (out.length > MAX_EXPANSIONS) throw tooMany(pattern);
      continue;
    }
    const { open, close, options } = brace;
    const head = current.slice(0, open);
    const tail = current.slice(close + 1);
    for (let i = options.length - 1; i >= 0; i--) pending.push(head + options[i]! + tail);
    if (pending.length + out.length > MAX_EXPANSIONS) throw tooMany(pattern);
  }
  return out.reverse();
}

function tooMany(pattern: string): Error {
  return new Error(`the glob ${JSON.stringify(pattern)} expands to more than ${MAX_EXPANSIONS} alternatives`);
}

/** The first `{…}` with a top-level comma or a range, and its options; braces without either stay literal. */
function findBrace(text: string): { open: number; close: number; options: string[] } | null {
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (c !== '{') continue;
    let depth = 0;
    const commas: number[] = [];
    for (let j = i + 1; j < text.length; j++) {
      const d = text[j];
      if (d === '\\') {
        j++;
        continue;
      }
      if (d === '{') depth++;
      else if (d === '}') {
        if (depth > 0) {
          depth--;
          continue;
        }
        const body = text.slice(i + 1, j);
        if (commas.length > 0) {
          const options: string[] = [];
          let start = i + 1;
          for (const at of commas) {
            options.push(text.slice(start, at));
            start = at + 1;
          }
          options.push(text.slice(start, j));
          return { open: i, close: j, options };
        }
        const range = rangeOf(body);
        if (range) return { open: i, close: j, options: range };
        break;
      } else if (d === ',' && depth === 0) commas.push(j);
    }
    // Not an expansion: this brace is literal; look for the next one.
  }
  return null;
}

function rangeOf(body: string): string[] | null {
  const numeric = /^(-?\d+)\.\.(-?\d+)$/.exec(body);
  if (numeric) {
    const from = Number(numeric[1]);
    const to = Number(numeric[2]);
    if (Math.abs(to - from) >= MAX_EXPANSIONS)
      throw new Error(`the range {${body}} has more than ${MAX_EXPANSIONS} values`);
    const out: string[] = [];
    for (let n = from; from <= to ? n <= to : n >= to; n += from <= to ? 1 : -1) out.push(String(n));
    return out;
  }
  const letters = /^([A-Za-z])\.\.([A-Za-z])$/.exec(body);
  if (letters) {
    const from = letters[1]!.charCodeAt(0);
    const to = letters[2]!.charCodeAt(0);
    const out: string[] = [];
    for (let n = from; from <= to ? n <= to : n >= to; n += from <= to ? 1 : -1) out.push(String.fromCharCode(n));
    return out;
  }
  return null;
}

// ---- segments and tokens ----

/**
 * One alternative's segments, and for a pattern ending in `/**` (or `/*`, `/**\/*`) the segments of its
 * folder. A trailing globstar means "one or more segments": the folder's contents, not the folder.
 */
function compileAlternative(pattern: string, names: boolean): { segments: Segment[]; folder: Segment[] | null } {
  // Split like the input (split below): the root "/" is one empty segment, not two.
  const parts = names ? [pattern] : pattern === '/' ? [''] : splitUnescaped(pattern);
  const segments: Segment[] = [];
  for (const part of parts) {
    if (!names && part === '**') {
      // Consecutive globstars are one.
      if (segments[segments.length - 1]?.kind !== 'globstar') segments.push({ kind: 'globstar' });
      continue;
    }
    // A part without `\`, `*`, `?` or `[` is its own text (tokenize would read it char by char).
    if (!WILD_SYNTAX.test(part)) {
      segments.push({ kind: 'literal', text: part });
      continue;
    }
    const tokens = tokenize(part);
    if (tokens.every((t) => t.kind === 'char')) {
      segments.push({ kind: 'literal', text: String.fromCodePoint(...tokens.map((t) => (t as { cp: number }).cp)) });
    } else {
      const first = tokens[0];
      segments.push({ kind: 'wild', tokens, dotted: first?.kind === 'char' && first.cp === 0x2e });
    }
  }
  if (names) return { segments, folder: null };
  const last = segments[segments.length - 1];
  if (last?.kind === 'wild' && last.tokens.length === 1 && last.tokens[0]!.kind === 'star') {
    // `dir/*` and `dir/**/*` cover the folder's contents too (a `*` never matches an empty name): the
    // folder itself is not one of them, and a call on it (moving or deleting `dir`) cannot be judged.
    const folder = segments.slice(0, segments[segments.length - 2]?.kind === 'globstar' ? -2 : -1);
    return { segments, folder: folder.length > 0 ? folder : null };
  }
  if (last?.kind !== 'globstar') return { segments, folder: null };
  const folder = segments.slice(0, -1);
  return { segments: [...folder, { kind: 'one' }, { kind: 'globstar' }], folder: folder.length > 0 ? folder : null };
}

const WILD_SYNTAX = /[\\*?[]/;

/** Splits on unescaped `/`. */
function splitUnescaped(pattern: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++;
    else if (pattern[i] === '/') {
      out.push(pattern.slice(start, i));
      start = i + 1;
    }
  }
  out.push(pattern.slice(start));
  return out;
}

function tokenize(part: string): Token[] {
  const cps = Array.from(part, (c) => c.codePointAt(0)!);
  const tokens: Token[] = [];
  for (let i = 0; i < cps.length; i++) {
    const cp = cps[i]!;
    if (cp === 0x5c /* \ */) {
      if (i + 1 < cps.length) tokens.push({ kind: 'char', cp: cps[++i]! });
      continue;
    }
    if (cp === 0x2a /* * */) {
      if (tokens[tokens.length - 1]?.kind !== 'star') tokens.push({ kind: 'star' });
      continue;
    }
    if (cp === 0x3f /* ? */) {
      tokens.push({ kind: 'any' });
      continue;
    }
    if (cp === 0x5b /* [ */) {
      const parsed = parseClass(cps, i);
      if (parsed) {
        tokens.push(parsed.token);
        i = parsed.end;
        continue;
      }
    }
    tokens.push({ kind: 'char', cp });
  }
  return tokens;
}

/** `[...]` starting at `start`, or null when it does not close (then `[` is literal). */
function parseClass(cps: readonly number[], start: number): { token: Token; end: number } | null {
  let i = start + 1;
  let negated = false;
  if (cps[i] === 0x21 /* ! */ || cps[i] === 0x5e /* ^ */) {
    negated = true;
    i++;
  }
  const ranges: number[] = [];
  let first = true;
  for (; i < cps.length; i++) {
    let cp = cps[i]!;
    if (cp === 0x5d /* ] */ && !first) return { token: { kind: 'class', negated, ranges }, end: i };
    first = false;
    if (cp === 0x5b /* [ */ && cps[i + 1] === 0x3a /* : */)
      throw new Error('POSIX character classes ([[:alpha:]]) are not supported; write the ranges ([a-zA-Z])');
    if (cp === 0x5c /* \ */ && i + 1 < cps.length) cp = cps[++i]!;
    let hi = cp;
    if (cps[i + 1] === 0x2d /* - */ && i + 2 < cps.length && cps[i + 2] !== 0x5d) {
      hi = cps[i + 2]!;
      if (hi === 0x5c && i + 3 < cps.length) {
        hi = cps[i + 3]!;
        i++;
      }
      i += 2;
      if (hi < cp) throw new Error(`the range ${String.fromCodePoint(cp)}-${String.fromCodePoint(hi)} is reversed`);
    }
    ranges.push(cp, hi);
  }
  return null;
}

// ---- running ----

/** Runs one alternative over the input's segments: a set of states, one step per segment. */
function run(segments: readonly Segment[], input: readonly string[]): boolean {
  const k = segments.length;
  let current = new Uint8Array(k + 1);
  let next = new Uint8Array(k + 1);
  current[0] = 1;
  close(segments, current);
  for (const part of input) {
    next.fill(0);
    let live = false;
    for (let i = 0; i < k; i++) {
      if (current[i] === 0) continue;
      steps++;
      const segment = segments[i]!;
      if (segment.kind === 'globstar' || segment.kind === 'one') {
        if (part !== '.' && part !== '..') {
          next[segment.kind === 'globstar' ? i : i + 1] = 1;
          live = true;
        }
      } else if (matchSegment(segment, part)) {
        next[i + 1] = 1;
        live = true;
      }
    }
    if (!live) return false;
    close(segments, next);
    [current, next] = [next, current];
  }
  return current[k] === 1;
}

/** Adds the states reachable without input: past each live globstar. */
function close(segments: readonly Segment[], states: Uint8Array): void {
  for (let i = 0; i < segments.length; i++) if (states[i] === 1 && segments[i]!.kind === 'globstar') states[i + 1] = 1;
}

function matchSegment(segment: Extract<Segment, { kind: 'literal' | 'wild' }>, part: string): boolean {
  if (segment.kind === 'literal') {
    steps++;
    return segment.text === part;
  }
  if (part === '') return false;
  if (!segment.dotted && (part === '.' || part === '..')) return false;
  const tokens = segment.tokens;
  if (tokens.length === 1 && tokens[0]!.kind === 'star') return true;
  const m = tokens.length;
  let current = new Uint8Array(m + 1);
  let next = new Uint8Array(m + 1);
  current[0] = 1;
  closeStars(tokens, current);
  for (const c of part) {
    const cp = c.codePointAt(0)!;
    next.fill(0);
    let live = false;
    for (let j = 0; j < m; j++) {
      if (current[j] === 0) continue;
      steps++;
      const t = tokens[j]!;
      if (t.kind === 'star') {
        next[j] = 1;
        live = true;
      } else if (t.kind === 'any' || (t.kind === 'char' ? t.cp === cp : inClass(t, cp))) {
        next[j + 1] = 1;
        live = true;
      }
    }
    if (!live) return false;
    closeStars(tokens, next);
    [current, next] = [next, current];
  }
  return current[m] === 1;
}

function closeStars(tokens: readonly Token[], states: Uint8Array): void {
  for (let j = 0; j < tokens.length; j++) if (states[j] === 1 && tokens[j]!.kind === 'star') states[j + 1] = 1;
}

/** True when `cp` is in the class token's ranges (or, for a negated class, outside them). */
export function inClass(token: { readonly negated: boolean; readonly ranges: readonly number[] }, cp: number): boolean {
  let hit = false;
  for (let r = 0; r < token.ranges.length; r += 2) {
    if (cp >= token.ranges[r]! && cp <= token.ranges[r + 1]!) {
      hit = true;
      break;
    }
  }
  return hit !== token.negated;
}
