/**
 * The regular expressions of JSON Schema (`pattern`, `patternProperties`' names), tested in linear time. Ajv compiled
 * them into ECMAScript RegExps, which backtrack: a schema's `^(a+)+$` (a registered tool's, or an MCP upstream's
 * `inputSchema`, which a malicious upstream writes) and a model's argument `"aaaa…a!"` (30 characters: seconds, 40:
 * hours) held the event loop, every call of every tenant with it. Each pattern is read as ECMAScript reads it (the `u`
 * flag, Ajv's), translated to an RE2 expression that means the same, and matched by RE2 (re2js: an automaton, linear
 * in the text). Every literal and class is written out as code points (`\x{…}`): RE2's own meaning of `.`, `\s`,
 * `[^…]` or an escape is never relied on, nor its Unicode tables (a `\p{…}` is read from this engine's own RegExp:
 * schema-regexp-properties.ts). What RE2 cannot match (lookaround, backreferences) does not compile: the schema is
 * refused, naming the pattern, never checked otherwise than ECMAScript would (nor with a backtracking engine).
 */
import { RE2JS } from 're2js';
import { boundedTest } from './schema-regexp-dfa.js';
import { propertySet, type Ranges } from './schema-regexp-properties.js';
import { MAX_PROGRAM, MAX_PROPERTY_RANGES, MAX_WORK, programBound } from './schema-regexp-size.js';

/** What Ajv calls a pattern with (its `code.regExp` option): returns an object with `test`. */
export interface LinearRegExp {
  test(text: string): boolean;
  /** Ajv keys a compiled pattern by it (one per Ajv): distinct for distinct patterns. */
  toString(): string;
  /** The RE2 programs a test runs (src/schema-weights.ts weighs a test by them). */
  readonly programs?: number;
}

/**
 * Compiles `pattern` (ECMAScript syntax, `flags` Ajv's `"u"`) to a linear-time matcher; throws when it is not an
 * ECMAScript pattern, or has what RE2 cannot match with the same meaning.
 */
export function linearRegExp(pattern: string, flags: string): LinearRegExp {
  if (flags !== 'u') throw new Error(`pattern ${JSON.stringify(pattern)}: only the u flag is read (got "${flags}")`);
  // Refused as before when ECMAScript refuses it (a syntax error): the parser below reads valid patterns only.
  const native = new RegExp(pattern, 'u');
  // `^[a-z ]+$` and the like (each quantified character followed by none it could be): ECMAScript's own RegExp, in
  // linear time (RE2 took 4 times as long, 300 against 60 ns on 16 characters).
  if (linearAsIs(pattern)) return native;
  let translated: Conjunction;
  let re2: RE2JS, must: RE2JS[], mustNot: RE2JS[];
  try {
    translated = new Translation(pattern).run();
    const expressions = [translated.rest, ...translated.must, ...translated.mustNot].map(anywhere);
    const bound = expressions.reduce((sum, expression) => sum + programBound(expression), 0);
    if (bound > MAX_PROGRAM)
      throw new Error(`too large: up to ${bound} RE2 instructions, at most ${MAX_PROGRAM} (src/schema-regexp-size.ts)`);
    const compiled = expressions.map((expression) => RE2JS.compile(expression));
    re2 = compiled[0]!;
    must = compiled.slice(1, 1 + translated.must.length);
    mustNot = compiled.slice(1 + translated.must.length);
  } catch (error) {
    throw new Error(
      `pattern ${JSON.stringify(pattern)} is not supported: ${(error as Error).message} (patterns are matched in linear time, by RE2)`,
    );
  }
  const key = `re2:${JSON.stringify(pattern)}`;
  // A text RE2 would take longer than MAX_WORK allows fails the pattern: refused, not tested for seconds.
  const longest = Math.floor(MAX_WORK / [re2, ...must, ...mustNot].reduce((sum, re) => sum + re.programSize(), 0));
  // Each test charges its DFA's growth to the process's budget (schema-regexp-dfa.ts).
  const testRest = boundedTest(re2);
  const [testMust, testMustNot] = [must.map(boundedTest), mustNot.map(boundedTest)];
  if (must.length === 0 && mustNot.length === 0)
    return { test: (text: string) => text.length <= longest && testRest(text), toString: () => key, programs: 1 };
  return {
    test: (text: string) =>
      text.length <= longest && testMust.every((t) => t(text)) && !testMustNot.some((t) => t(text)) && testRest(text),
    toString: () => key,
    programs: 1 + must.length + mustNot.length,
  };
}
linearRegExp.code = 'linearRegExp';

function linearAsIs(pattern: string): boolean {
  try {
    const terms = new Translation(pattern).singleCharacterTerms();
    // Past 64 terms, RE2 (the check looks at pairs of terms: its own time must not grow with the square).
    return terms !== undefined && terms.length <= 64 && backtracksLinearly(terms);
  } catch {
    return false; // read by RE2, or refused there
  }
}

/**
 * `expression` found anywhere in a text (RegExp's `test`), as a match of the whole text: any code points around it.
 * re2js' `testExact` runs its DFA; its unanchored `test` took 2.5 times as long (885 against 345 ns on `^[a-z ]+$`
 * and a 16-character text; 46 against 17 µs on 1,000 characters).
 */
function anywhere(expression: string): string {
  return `${ANY}*(?:${expression})${ANY}*`;
}

/** A pattern as RE2 expressions: the text matches it when it matches each of `must` and `rest`, none of `mustNot`. */
interface Conjunction {
  readonly must: readonly string[];
  readonly mustNot: readonly string[];
  readonly rest: string;
}

/** One character of `set`, `min` to `max` times. */
interface Term {
  readonly set: Ranges;
  readonly min: number;
  readonly max: number;
  readonly lazy: boolean;
}

/**
 * Does a backtracking engine match `^` + `terms` in time linear in the text? Each term whose count varies (greedy)
 * shares no character with what may follow it (the next terms up to the first that must match once; `$` none): a
 * character it gives back fails whatever follows at once, so no count is ever tried twice against the same text.
 * Anchored at the start, other starts fail at once.
 */
function backtracksLinearly(terms: readonly Term[]): boolean {
  for (const [i, term] of terms.entries()) {
    if (term.lazy) return false;
    if (term.min === term.max) continue;
    for (const next of terms.slice(i + 1)) {
      if (intersects(term.set, next.set)) return false;
      if (next.min >= 1) break;
    }
  }
  return true;
}

/** Do the two sets share a code point? One walk of both (each sorted). */
function intersects(a: Ranges, b: Ranges): boolean {
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i]! <= b[j + 1]! && b[j]! <= a[i + 1]!) return true;
    if (a[i + 1]! < b[j + 1]!) i += 2;
    else j += 2;
  }
  return false;
}

const point = (c: number): Ranges => [c, c];

const MAX = 0x10ffff;
const ANY = '[\\x{0}-\\x{10ffff}]';
const DIGIT: Ranges = [0x30, 0x39];
const WORD: Ranges = [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a];
/** ECMAScript's WhiteSpace and LineTerminator (`\s`); RE2's `\s` is only [\t\n\f\r ]. */
const SPACE: Ranges = [
  0x09, 0x0d, 0x20, 0x20, 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f,
  0x3000, 0x3000, 0xfeff, 0xfeff,
];
/** ECMAScript's `.` without the `s` flag: all but its line terminators (RE2's excludes only \n). */
const DOT: Ranges = complement([0x0a, 0x0a, 0x0d, 0x0d, 0x2028, 0x2029]);

function union(a: Ranges, b: Ranges): Ranges {
  const pairs: [number, number][] = [];
  for (const r of [a, b]) for (let i = 0; i < r.length; i += 2) pairs.push([r[i]!, r[i + 1]!]);
  pairs.sort((x, y) => x[0] - y[0]);
  const out: number[] = [];
  for (const [lo, hi] of pairs) {
    if (out.length > 0 && lo <= out[out.length - 1]! + 1) out[out.length - 1] = Math.max(out[out.length - 1]!, hi);
    else out.push(lo, hi);
  }
  return out;
}

function complement(set: Ranges): Ranges {
  const out: number[] = [];
  let next = 0;
  for (let i = 0; i < set.length; i += 2) {
    if (set[i]! > next) out.push(next, set[i]! - 1);
    next = set[i + 1]! + 1;
  }
  if (next <= MAX) out.push(next, MAX);
  return out;
}

const hex = (c: number): string => `\\x{${c.toString(16)}}`;

/** A class in RE2 syntax, every range written as code points; the empty set as a class that matches nothing. */
function classOf(set: Ranges): string {
  if (set.length === 0) return `[^\\x{0}-\\x{10ffff}]`;
  let out = '[';
  for (let i = 0; i < set.length; i += 2)
    out += set[i] === set[i + 1] ? hex(set[i]!) : `${hex(set[i]!)}-${hex(set[i + 1]!)}`;
  return out + ']';
}

const SYNTAX = new Set([...'^$\\.*+?()[]{}|/'].map((c) => c.codePointAt(0)!));
const CONTROL: Readonly<Record<string, number>> = { f: 0x0c, n: 0x0a, r: 0x0d, t: 0x09, v: 0x0b };

/**
 * A valid ECMAScript pattern (u flag) read term by term into an RE2 expression of the same meaning. Groups become
 * non-capturing (only whether it matches is asked), lazy quantifiers greedy (the same strings match).
 */
class Translation {
  readonly #cps: number[];
  #at = 0;
  /** The ranges its property escapes have written so far (at most MAX_PROPERTY_RANGES, checked as they are read). */
  #propertyRanges = 0;

  constructor(pattern: string) {
    this.#cps = Array.from(pattern, (c) => c.codePointAt(0)!);
  }

  /**
   * The pattern as RE2 expressions. `^(?=A)(?!B)R` (lookaheads at the start of an anchored pattern without a
   * top-level `|`, as zod's `hostname()` writes) holds at the start only: the text matches `^A`, not `^B`, and `^R`.
   * Any other lookaround is refused.
   */
  run(): Conjunction {
    const must: string[] = [];
    const mustNot: string[] = [];
    if (this.#peek() === '^') {
      this.#at++;
      while (this.#peek() === '(' && this.#peek(1) === '?' && (this.#peek(2) === '=' || this.#peek(2) === '!')) {
        const positive = this.#peek(2) === '=';
        this.#at += 3;
        const inner = `^(?:${this.#disjunction()})`;
        if (this.#next() !== ')') throw new Error('unclosed group');
        (positive ? must : mustNot).push(inner);
      }
      this.#at = must.length + mustNot.length === 0 ? 0 : this.#at;
    }
    const rest = this.#disjunction();
    if (this.#at !== this.#cps.length) throw new Error(`unexpected ${this.#peekChar()}`);
    if (must.length + mustNot.length > 0 && this.#topLevelAlternatives > 1) throw new Error('lookaround');
    return { must, mustNot, rest: must.length + mustNot.length > 0 ? `^(?:${rest})` : rest };
  }

  /** `^`, then terms each one character of a set (quantified or not), then `$` or nothing: those terms, else undefined. */
  singleCharacterTerms(): Term[] | undefined {
    this.#at = 0;
    if (this.#next() !== '^') return undefined;
    const terms: Term[] = [];
    while (this.#at < this.#cps.length) {
      const c = this.#next();
      if (c === '$' && this.#at === this.#cps.length) terms.push({ set: [], min: 1, max: 1, lazy: false });
      else if ('^$|()'.includes(c) || (c === '\\' && /^[bB1-9kpP]$/.test(this.#peek()))) return undefined;
      else {
        const set =
          c === '.'
            ? DOT
            : c === '['
              ? this.#classSet()
              : c === '\\'
                ? (this.#classEscape() ?? point(this.#characterEscape()))
                : point(c.codePointAt(0)!);
        terms.push({ set, ...this.#bounds() });
      }
    }
    return terms;
  }

  /** The bounds of the quantifier here (consumed), {1, 1} without one. */
  #bounds(): { min: number; max: number; lazy: boolean } {
    const c = this.#peek();
    let [min, max] = [1, 1];
    if (c === '*' || c === '+' || c === '?') {
      this.#at++;
      [min, max] = [c === '+' ? 1 : 0, c === '?' ? 1 : Infinity];
    } else if (c === '{') {
      let text = '';
      while (this.#peek() !== '}') text += this.#next();
      this.#at++;
      const [lo, hi] = text.slice(1).split(',');
      [min, max] = [Number(lo), hi === undefined ? Number(lo) : hi === '' ? Infinity : Number(hi)];
    } else return { min, max, lazy: false };
    const lazy = this.#peek() === '?';
    if (lazy) this.#at++;
    return { min, max, lazy };
  }

  /** How many alternatives the last top-level disjunction read had. */
  #topLevelAlternatives = 0;

  #peek(offset = 0): string {
    const c = this.#cps[this.#at + offset];
    return c === undefined ? '' : String.fromCodePoint(c);
  }

  #peekChar(): string {
    return this.#at < this.#cps.length ? JSON.stringify(this.#peek()) : 'end';
  }

  #next(): string {
    const c = this.#peek();
    this.#at++;
    return c;
  }

  #disjunction(): string {
    const alternatives = [this.#alternative()];
    while (this.#peek() === '|') {
      this.#at++;
      alternatives.push(this.#alternative());
    }
    this.#topLevelAlternatives = alternatives.length;
    return alternatives.join('|');
  }

  #alternative(): string {
    let out = '';
    while (this.#at < this.#cps.length && this.#peek() !== '|' && this.#peek() !== ')') out += this.#term();
    return out;
  }

  #term(): string {
    const c = this.#peek();
    if (c === '^' || c === '$') {
      this.#at++;
      return c; // RE2 without the m flag: the start and the end of the text, as ECMAScript's
    }
    if (c === '\\' && (this.#peek(1) === 'b' || this.#peek(1) === 'B')) {
      this.#at += 2;
      return `\\${this.#peek(-1)}`; // both: the ASCII word characters [0-9A-Za-z_] (no i flag)
    }
    return this.#atom() + this.#quantifier();
  }

  #quantifier(): string {
    const c = this.#peek();
    let out: string;
    if (c === '*' || c === '+' || c === '?') {
      this.#at++;
      out = c;
    } else if (c === '{') {
      let text = '';
      while (this.#peek() !== '}') text += this.#next();
      this.#at++;
      const [min, max] = text.slice(1).split(',');
      const number = (digits: string): string => {
        if (!/^\d+$/.test(digits)) throw new Error(`unexpected quantifier {${text.slice(1)}}`);
        return String(BigInt(digits));
      };
      out = `{${number(min!)}${max === undefined ? '' : `,${max === '' ? '' : number(max)}`}}`;
    } else return '';
    if (this.#peek() === '?') this.#at++; // lazy: the same strings match
    return out;
  }

  #atom(): string {
    const c = this.#next();
    switch (c) {
      case '.':
        return classOf(DOT);
      case '[':
        return this.#class();
      case '(':
        return this.#group();
      case '\\':
        return this.#atomEscape();
      default:
        return hex(c.codePointAt(0)!);
    }
  }

  #group(): string {
    if (this.#peek() === '?') {
      const kind = this.#peek(1);
      if (kind === ':') this.#at += 2;
      else if (kind === '<' && this.#peek(2) !== '=' && this.#peek(2) !== '!') {
        while (this.#next() !== '>'); // a named group: its name is not needed
      } else throw new Error(kind === '=' || kind === '!' || kind === '<' ? 'lookaround' : `(?${kind}`);
    }
    const inner = this.#disjunction();
    if (this.#next() !== ')') throw new Error('unclosed group');
    return `(?:${inner})`;
  }

  #atomEscape(): string {
    const c = this.#peek();
    if (/^[1-9k]$/.test(c)) throw new Error('a backreference');
    const set = this.#classEscape();
    if (set !== undefined) return classOf(set);
    return hex(this.#characterEscape());
  }

  /** After a `\`: the set of `\d \D \w \W \s \S` (consumed), or undefined (nothing consumed). */
  #classEscape(): Ranges | undefined {
    const c = this.#peek();
    const sets: Readonly<Record<string, Ranges>> = { d: DIGIT, w: WORD, s: SPACE };
    const lower = c.toLowerCase();
    if (lower === 'p') {
      let name = '';
      for (this.#at += 2; this.#peek() !== '}';) name += this.#next();
      this.#at++;
      const set = propertySet(name);
      this.#propertyRanges += set.length / 2 + 1;
      if (this.#propertyRanges > MAX_PROPERTY_RANGES)
        throw new Error(`too large: its property escapes write more than ${MAX_PROPERTY_RANGES} ranges of code points`);
      return c === lower ? set : complement(set);
    }
    const set = sets[lower];
    if (set === undefined) return undefined;
    this.#at++;
    return c === lower ? set : complement(set);
  }

  /** After a `\`: the code point a character escape means (u flag), consumed. */
  #characterEscape(): number {
    const c = this.#next();
    if (CONTROL[c] !== undefined) return CONTROL[c];
    if (c === 'c') return this.#next().codePointAt(0)! % 32;
    if (c === '0') return 0; // u flag: never followed by a digit in a valid pattern
    if (c === 'x') return this.#hexDigits(2);
    if (c === 'u') {
      if (this.#peek() === '{') {
        this.#at++;
        let digits = '';
        while (this.#peek() !== '}') digits += this.#next();
        this.#at++;
        return parseInt(digits, 16);
      }
      const lead = this.#hexDigits(4);
      // \uD83D\uDE00: one code point, as ECMAScript reads a pair of escapes under the u flag.
      if (lead >= 0xd800 && lead <= 0xdbff && this.#peek() === '\\' && this.#peek(1) === 'u') {
        const trail = parseInt(
          this.#cps
            .slice(this.#at + 2, this.#at + 6)
            .map((x) => String.fromCodePoint(x))
            .join(''),
          16,
        );
        if (this.#peek(2) !== '{' && trail >= 0xdc00 && trail <= 0xdfff) {
          this.#at += 6;
          return (lead - 0xd800) * 0x400 + (trail - 0xdc00) + 0x10000;
        }
      }
      return lead;
    }
    const code = c.codePointAt(0);
    if (code === undefined || !SYNTAX.has(code)) throw new Error(`the escape \\${c}`);
    return code;
  }

  #hexDigits(count: number): number {
    let digits = '';
    for (let i = 0; i < count; i++) digits += this.#next();
    if (!/^[0-9a-fA-F]+$/.test(digits)) throw new Error(`the escape ${digits}`);
    return parseInt(digits, 16);
  }

  /** After `[`: the class, up to its `]`, as an RE2 class of code points. */
  #class(): string {
    return classOf(this.#classSet());
  }

  /** After `[`: the class, up to its `]`, as a set. */
  #classSet(): Ranges {
    const negated = this.#peek() === '^';
    if (negated) this.#at++;
    // Its members' ranges, unioned once at the end (a class of 100,000 members is not 100,000 unions).
    const set: number[] = [];
    while (this.#peek() !== ']') {
      if (this.#at >= this.#cps.length) throw new Error('unclosed class');
      const from = this.#classAtom();
      if (this.#peek() === '-' && this.#peek(1) !== ']' && this.#peek(1) !== '' && typeof from === 'number') {
        this.#at++;
        const to = this.#classAtom();
        if (typeof to !== 'number' || to < from) throw new Error('a class range out of order');
        set.push(from, to);
      } else set.push(...(typeof from === 'number' ? [from, from] : from));
    }
    this.#at++;
    const members = union(set, []);
    return negated ? complement(members) : members;
  }

  /** One member of a class: a code point, or a set (`\d`…). */
  #classAtom(): number | Ranges {
    const c = this.#next();
    if (c !== '\\') return c.codePointAt(0)!;
    if (this.#peek() === 'b') return (this.#at++, 0x08);
    if (this.#peek() === '-') return (this.#at++, 0x2d);
    return this.#classEscape() ?? this.#characterEscape();
  }
}
