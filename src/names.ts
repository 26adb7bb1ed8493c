/**
 * Tool names in one canonical form.
 *
 * Every comparison of tool names in toolgate (allowlist layers, registry look-ups, rule selectors)
 * goes through {@link canonical}, so that "Search", "ｓｅａｒｃｈ" and "search" are one permission and
 * not three. Namespaces are part of the name: "mcp:search" and "search" stay different.
 */
import { ConfigurationError } from './errors.js';
import { caseFold } from './unicode/case-fold.js';

const EDGE_WHITE_SPACE = /^\p{White_Space}+|\p{White_Space}+$/gu;
// Printable ASCII without upper case or spaces: already canonical, the common case for tool names.
const CANONICAL_ASCII = /^[\x21-\x40\x5b-\x7e]*$/;
const PRINTABLE_ASCII = /^[\x21-\x7e]*$/;

/**
 * The longest tool name declared (and its canonical form): a longer one is a ConfigurationError. Names key the
 * registry, the allowlists, the policy's rules, the confusables' skeletons, the router's and an upstream's tables, and
 * V8 hashes a string past 16,383 characters by its length alone: an upstream listing 2,000 tools of 16,400-character
 * names differing at their end took 13.7 s to register (each name compared with every other). At 1,024 a name's
 * UTS #39 skeleton stays below that too (at most 7 units for each of the name's or its canonical form's: U+AF66); MCP
 * asks for at most 128, OpenAI's and Anthropic's APIs allow 64 and 128.
 */
export const NAME_LENGTH_MAX = 1_024;

/** The most names the canonical-form cache keeps; callers that send endless unique names cannot grow it past this. */
export const CANONICAL_CACHE_LIMIT = 4096;
/** Longer names are canonicalised every time rather than cached, so a megabyte name is not retained. */
const CACHEABLE_LENGTH = 256;
// Two generations of half the limit each: a name is added to `young`; when `young` is full it becomes
// `old` and the previous `old` is dropped whole. A hit in `old` is promoted. Evicting one entry at a time
// from a Map (`cache.keys().next()`) walks the holes that earlier deletions left and cost microseconds
// per name once callers sent endless unique names (bench/, issue 6).
const GENERATION = CANONICAL_CACHE_LIMIT / 2;
let young = new Map<string, string>();
let old = new Map<string, string>();

/**
 * The canonical form of a tool name: NFKC, trimmed of Unicode White_Space, fully case-folded, then
 * NFKC again so that `canonical(canonical(x)) === canonical(x)`.
 *
 * @example
 * canonical('Search') === canonical('ｓｅａｒｃｈ') // true: both are 'search'
 * canonical('STRASSE') === canonical('Straße')     // true: full case folding, not toLowerCase
 * canonical('mcp:search') === canonical('search')  // false: a namespace is part of the name
 */
export function canonical(name: string): string {
  if (typeof name !== 'string') {
    throw new TypeError(`canonical() expects a string tool name, got ${describe(name)}`);
  }
  // Already canonical (the common case): a test costs less than a cache look-up, and keeping such names
  // out of the cache keeps a bulk pass (resolving 100,000 names) from churning it (issue 12).
  if (CANONICAL_ASCII.test(name)) return name;
  let hit = young.get(name);
  if (hit !== undefined) return hit;
  hit = old.get(name);
  if (hit !== undefined) {
    remember(name, hit);
    return hit;
  }
  let form: string;
  if (PRINTABLE_ASCII.test(name)) form = name.toLowerCase();
  else form = caseFold(name.normalize('NFKC').replace(EDGE_WHITE_SPACE, '')).normalize('NFKC');
  if (name.length <= CACHEABLE_LENGTH) remember(name, form);
  return form;
}

function remember(name: string, form: string): void {
  if (young.size >= GENERATION) {
    old = young;
    young = new Map();
  }
  young.set(name, form);
}

/** How many canonical forms are cached now (for tests and diagnostics). */
export function canonicalCacheSize(): number {
  return young.size + old.size;
}

// Control (Cc), format (Cf: zero-width, bidi controls) and surrogate (Cs) code points make a name that
// renders differently from how it compares; so do Default_Ignorable code points that are letters or marks
// (U+3164 HANGUL FILLER, U+115F, U+FFA0, variation selectors, U+034F): a declared name must not hold any.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Default_Ignorable_Code_Point}]/u;
// What a person must not be shown raw: the above, plus line and paragraph separators.
const UNDISPLAYABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/gu;

/**
 * `text` with every control, format (bidi, zero-width), line/paragraph separator, unpaired surrogate and
 * Default_Ignorable code point written as `\u{XXXX}`, so that what a person is shown (an approval
 * prompt) reads as what runs: a bidi override in an argument cannot reorder the text around it.
 *
 * @example
 * displaySafe('rm \u202Etxt.exe') // 'rm \\u{202E}txt.exe'
 */
export function displaySafe(text: string): string {
  return text.replace(UNDISPLAYABLE, (c) => `\\u{${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}}`);
}

/**
 * Checks a declared tool name and returns its canonical form. A name that is not a string, is empty
 * after canonicalisation, or holds control, format or unpaired-surrogate characters is a
 * {@link ConfigurationError} naming what was wrong.
 */
export function declaredName(name: unknown, where: string): string {
  if (typeof name !== 'string') {
    throw new ConfigurationError(`${where}: a tool name must be a string, got ${describe(name)}`);
  }
  if (name.length > NAME_LENGTH_MAX) throw tooLong(name, name.length, where);
  // Printable ASCII holds no surrogate, control or format character: only emptiness is left to check.
  // Already canonical (the common case): one test, no cache (bulk declarations, issue 12).
  if (name !== '' && CANONICAL_ASCII.test(name)) return name;
  if (name !== '' && PRINTABLE_ASCII.test(name)) return canonical(name);
  if (!name.isWellFormed()) {
    throw new ConfigurationError(`${where}: tool name ${JSON.stringify(name)} holds an unpaired surrogate`);
  }
  const bad = INVISIBLE.exec(name);
  if (bad) {
    const cp = bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    throw new ConfigurationError(
      `${where}: tool name ${JSON.stringify(name)} holds the invisible control, format or default-ignorable character U+${cp}; ` +
        'expected visible characters only',
    );
  }
  const form = canonical(name);
  if (form.length > NAME_LENGTH_MAX) throw tooLong(name, form.length, where);
  if (form === '') {
    throw new ConfigurationError(`${where}: tool name ${JSON.stringify(name)} is empty once trimmed and normalised`);
  }
  return form;
}

function tooLong(name: string, length: number, where: string): ConfigurationError {
  return new ConfigurationError(
    `${where}: tool name ${describe(name)} is ${length.toLocaleString('en-US')} characters long${length === name.length ? '' : ' once normalised'}; ` +
      `at most ${NAME_LENGTH_MAX.toLocaleString('en-US')} are allowed`,
  );
}

/**
 * Canonical forms of a list of declared names, in order, refusing collisions: two names with one
 * canonical form are a ConfigurationError quoting both, since which one a call reached would otherwise
 * depend on iteration order.
 */
export function canonicalIndex(
  names: Iterable<unknown>,
  where: string,
): { names: string[]; index: Map<string, string> } {
  if (
    names === null ||
    typeof names !== 'object' ||
    typeof (names as Iterable<unknown>)[Symbol.iterator] !== 'function'
  ) {
    throw new ConfigurationError(`${where}: expected an iterable of tool names, got ${describe(names)}`);
  }
  const index = new Map<string, string>();
  const list: string[] = [];
  for (const name of names) {
    const form = declaredName(name, where);
    const other = index.get(form);
    if (other !== undefined) {
      if (other === name) continue; // the same spelling twice is a repetition, not an ambiguity
      throw new ConfigurationError(
        `${where}: tool names ${JSON.stringify(other)} and ${JSON.stringify(name)} have the same canonical form ` +
          `${JSON.stringify(form)}; rename one of them`,
      );
    }
    index.set(form, name as string);
    list.push(name as string);
  }
  return { names: list, index };
}

/** Splits "github:search" into its namespace and stem; a name without a colon has no namespace. */
export function namespaceOf(name: string): string | null {
  const at = name.indexOf(':');
  return at <= 0 ? null : name.slice(0, at);
}

/** A short, safe description of an unexpected value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}
