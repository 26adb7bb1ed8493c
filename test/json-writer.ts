/**
 * JSON text written the ways a peer may write it, from random values (fast-check): object members in text order
 * (keys may repeat, may be integers), whitespace, escapes JSON.stringify does not make (`\/`, `\u0041`, upper-case
 * hex, escaped pairs, literal lone surrogates), numbers not in their shortest form (`1.0`, `1e2`, `-0`, long
 * digits), a duplicate key before a member. The answer splice's tests (test/gateway/answer-lines.test.ts) and
 * parseJsonText's (test/core/json-text.test.ts) write with it.
 */
import fc from 'fast-check';

/** A JSON value as an upstream writes it: object members in text order (keys may repeat, may be integers). */
export type Tree =
  | { readonly kind: 'leaf'; readonly value: string | number | boolean | null }
  | { readonly kind: 'array'; readonly items: readonly Tree[] }
  | { readonly kind: 'object'; readonly entries: readonly (readonly [string, Tree])[] };

export const trickyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.constantFrom(
    '',
    '/',
    '"',
    '\\',
    '\u2028',
    '\u2029',
    '\ud800',
    '\udfff',
    '\ud83d\ude00',
    '\u007f',
    '\b\f\n\r\t\u0000\u001f',
  ),
);
export const trickyKey = fc.oneof(
  { weight: 4, arbitrary: trickyString },
  {
    weight: 1,
    arbitrary: fc.constantFrom('0', '1', '10', '01', '-1', '4294967294', '4294967295', '1.5', '__proto__', 'toJSON'),
  },
);
const trickyNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 1e21, 1e-7, 2 ** 53, 2 ** 53 + 2, 0.1, 123.456, -1.5e-300),
);

export const { tree } = fc.letrec<{ tree: Tree; leaf: Tree; array: Tree; object: Tree }>((tie) => ({
  tree: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf'), tie('array'), tie('object')),
  leaf: fc
    .oneof(trickyString, trickyNumber, fc.boolean(), fc.constant(null))
    .map((value): Tree => ({ kind: 'leaf', value })),
  array: fc.array(tie('tree'), { maxLength: 4 }).map((items): Tree => ({ kind: 'array', items })),
  object: fc
    .array(fc.tuple(trickyKey, tie('tree')), { maxLength: 5 })
    .map((entries): Tree => ({ kind: 'object', entries })),
}));

export const rootObject = fc
  .array(fc.tuple(trickyKey, tree), { maxLength: 5 })
  .map((entries): Tree => ({ kind: 'object', entries }));

/** Writes JSON text; with `rate` > 0, each choice may take a form JSON.stringify does not write. */
export class Writer {
  #i = 0;
  readonly choices: readonly number[];
  readonly rate: number;
  constructor(choices: readonly number[], rate: number) {
    this.choices = choices;
    this.rate = rate;
  }
  /** A number in [0, 1). */
  #next(): number {
    const n = this.choices[this.#i++ % this.choices.length]!;
    return (n % 1000) / 1000;
  }
  #odd(): boolean {
    return this.rate > 0 && this.#next() < this.rate;
  }
  ws(): string {
    return this.#odd() ? [' ', '\t', '\r', '  '][Math.floor(this.#next() * 4)]! : '';
  }
  string(s: string): string {
    if (!this.#odd()) return JSON.stringify(s);
    let out = '"';
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
      const lone = !pair && c >= 0xd800 && c <= 0xdfff;
      const [escape, slash, literal] = [this.#odd(), this.#odd(), this.#odd()];
      if (escape) {
        const hex = c.toString(16).padStart(4, '0');
        out += `\\u${this.#next() < 0.5 ? hex : hex.toUpperCase()}`;
      } else if (c === 0x2f && slash) out += '\\/';
      else if (lone && literal)
        out += s[i]; // literal: JSON.parse takes it, JSON.stringify escapes it
      else if (pair) {
        out += s.slice(i, i + 2);
        i++;
      } else out += JSON.stringify(s[i]).slice(1, -1);
    }
    return `${out}"`;
  }
  number(n: number): string {
    if (!this.#odd()) return JSON.stringify(n);
    const forms = [n.toExponential(), n.toPrecision(21), Object.is(n, 0) || Object.is(n, -0) ? '-0' : `${n}`];
    if (Number.isInteger(n) && Math.abs(n) < 1e21) forms.push(`${n}.0`, `${n}E+00`, BigInt(n).toString());
    return forms[Math.floor(this.#next() * forms.length)]!;
  }
  value(t: Tree): string {
    const w = () => this.ws();
    if (t.kind === 'leaf') {
      const v = t.value;
      return typeof v === 'string' ? this.string(v) : typeof v === 'number' ? this.number(v) : JSON.stringify(v);
    }
    if (t.kind === 'array') return `[${w()}${t.items.map((x) => `${this.value(x)}${w()}`).join(`,${w()}`)}]`;
    const parts: string[] = [];
    for (const [k, v] of t.entries) {
      // A duplicate key: an entry of the same key before this one (the parse keeps the later value, first place).
      if (this.#odd()) parts.push(`${this.string(k)}${w()}:${w()}${this.value({ kind: 'leaf', value: 1 })}`);
      parts.push(`${this.string(k)}${w()}:${w()}${this.value(v)}${w()}`);
    }
    return `{${w()}${parts.join(`,${w()}`)}}`;
  }
}
