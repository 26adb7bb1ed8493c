/**
 * The steps of keywords whose one statement reads the whole value (src/schema-bounds.ts counts the statements of
 * Ajv's code, src/schema-steps.ts): `maxLength` / `minLength` count a string's characters (Ajv's `ucs2length`, a loop
 * in its runtime), `pattern` and `patternProperties` match a string or a key (src/schema-regexp.ts, linear in it),
 * `format` runs its validator over the string, `enum` / `const` hash or compare a string, `maxProperties` / `minProperties` collect an object's keys
 * (`Object.keys`). Each cost one step however long the value: applied at 2^20 places by a `$ref` chain of 20 `allOf`
 * pairs, a leaf `{maxLength: 1000000}` over a 1,000,000-character string ran ~80 s. Each now adds the steps of its
 * work before (a string's) or as (an object's keys) it does it: a weight per character (past {@link FREE}) or key,
 * in steps of ~1 ns (`npx tsx` of 1,000,000-character strings and of 100,000 short ones, one check each, on the
 * shared 2-core machine, 2026-12-07). Ajv's own code, errors and messages run unchanged after the charge; only
 * `maxProperties` / `minProperties` are written anew (their count is the work), with Ajv's own errors.
 */
import { _, type Ajv, type CodeKeywordDefinition, type KeywordCxt } from 'ajv';
import { linearRegExp, type LinearRegExp } from './schema-regexp.js';

/**
 * Adds steps to the running check's count (src/schema-bounds.ts; an `$async` check's own, made the running one again
 * after each of its awaits): throws past its bound.
 */
type Spend = (steps: number) => void;

/**
 * Ajv's `ucs2length`: ~1.6–2 ns a character (1,000,000 characters, ASCII or astral). Weights are steps a character
 * (a step ~1 ns); a call's own cost is its statement's one step (see {@link weighKeywords}).
 */
const LENGTH = 2;

/**
 * The characters of a string each test reads without steps beyond its statement's one: a call's own ~5–20 ns are
 * not counted either, and an ordinary union of short strings (an id, a date-time, a `const` tag, at each of ten
 * variants: atk-round-ref-chain-loops' 40,000 events) stays where it was (counted whole, 98M steps became 132M).
 */
const FREE = 16;

/**
 * `enum` / `const` of a string (src/schema-enum.ts): a table's look-up hashes it, ~4 ns a character (100,000
 * characters, 20 members, 1,024 places: 414 ms), a `const` compares it, ~1.4.
 */
const ENUM = 4;

/**
 * A pattern kept as ECMAScript's own linear RegExp: ~0.3–1 ns a character (1,000,000; 20). One RE2 program (a
 * translated pattern has one, and one more per lookahead it splits off): ~15 ns a character (16–21 on 1,000,000,
 * 15 on 200).
 */
const NATIVE = 1;
const RE2_PROGRAM = 15;

/**
 * A format's validator (ajv-formats, full mode; src/schema-dialects.ts's own), the most ns a character on
 * 1,000,000-character strings of the kinds tried (letters, `a.a.…`, `/a/a…`, a URI's tail, base64, a date-time's):
 * `regex` compiles the string as a RegExp (40 on a URI), `email` reads `/a/a…` at 36, `uri-reference` a UUID's
 * letters at 18. A format not here (one added later, `int64` on a string): {@link FORMAT_ANY}.
 */
const FORMAT: Readonly<Record<string, number>> = {
  'date-time': 1,
  date: 1,
  time: 1,
  duration: 1,
  uri: 3,
  'uri-reference': 20,
  'uri-template': 2,
  url: 5,
  email: 40,
  hostname: 1,
  ipv4: 1,
  ipv6: 1,
  regex: 40,
  uuid: 1,
  'json-pointer': 2,
  'json-pointer-uri-fragment': 2,
  'relative-json-pointer': 1,
  byte: 7,
};
const FORMAT_ANY = 40;

/**
 * A key `Object.keys` collects: ~1 ns from an object of up to ~1,000 keys (V8 keeps its keys in order), ~230–600 ns
 * from a larger one (a dictionary, its keys sorted at each call: 10,000 keys 2.3 ms, 100,000 keys 60 ms).
 */
const KEY_SMALL = 1;
const KEY_LARGE = 250;
const SMALL_OBJECT = 1_020;

/** What {@link weighKeywords} reads of an Ajv. */
interface Keywords {
  getKeyword(keyword: string): ReturnType<Ajv['getKeyword']>;
}

/**
 * The keywords above of `ajv` with their steps counted by `spend`; `replace` puts a definition where Ajv's own stood
 * (src/schema-bounds.ts, so errors keep Ajv's order).
 */
export function weighKeywords(ajv: Keywords, replace: (definition: CodeKeywordDefinition) => void, spend: Spend) {
  const weigh = (data: unknown, perCharacter: number): void => {
    if (typeof data === 'string' && data.length > FREE) spend((data.length - FREE) * perCharacter);
  };
  const weighed = (keyword: string, weight: (cxt: KeywordCxt, ruleType?: string) => number | undefined): void => {
    const own = ownKeyword(ajv, keyword);
    const code = own.code.bind(own);
    replace({
      ...own,
      keyword,
      code(cxt: KeywordCxt, ruleType?: string) {
        const steps = weight(cxt, ruleType);
        if (steps !== undefined) cxt.gen.code(_`${cxt.gen.scopeValue('func', { ref: weigh })}(${cxt.data}, ${steps})`);
        code(cxt, ruleType);
      },
    });
  };
  // After src/schema-enum.ts's `enum` and `const` (src/schema-bounds.ts): a string is hashed or compared whole.
  weighed('enum', () => ENUM);
  weighed('const', () => ENUM);
  weighed('maxLength', () => LENGTH);
  weighed('minLength', () => LENGTH);
  // A format Ajv does not know (a UI hint, `textarea`) is not checked, nor one of numbers (`int32`) on a string.
  weighed('format', ({ schema, $data, it }, ruleType) => {
    if (ruleType === 'number') return undefined;
    if ($data) return FORMAT_ANY;
    const known: unknown = typeof schema === 'string' ? it.self.formats[schema] : undefined;
    if (known === undefined) return undefined;
    const of =
      typeof known === 'object' && known !== null && !(known instanceof RegExp)
        ? (known as { type?: string }).type
        : undefined;
    return (of ?? 'string') === 'string' ? (FORMAT[schema as string] ?? FORMAT_ANY) : undefined;
  });
  const count = (data: object): number => {
    const keys = Object.keys(data).length;
    spend(keys * (keys > SMALL_OBJECT ? KEY_LARGE : KEY_SMALL));
    return keys;
  };
  for (const keyword of ['maxProperties', 'minProperties']) {
    const own = ownKeyword(ajv, keyword);
    replace({
      ...own,
      keyword,
      code(cxt: KeywordCxt) {
        // Ajv's limitProperties, its `Object.keys(data).length` counted.
        const op = cxt.keyword === 'maxProperties' ? _`>` : _`<`;
        cxt.fail$data(_`${cxt.gen.scopeValue('func', { ref: count })}(${cxt.data}) ${op} ${cxt.schemaCode}`);
      },
    });
  }
}

function ownKeyword(ajv: Keywords, keyword: string): CodeKeywordDefinition {
  const own = ajv.getKeyword(keyword);
  if (typeof own !== 'object' || !('code' in own))
    throw new Error(`toolgate cannot weigh Ajv's "${keyword}" (no code of its own)`);
  return own;
}

/**
 * Ajv's `code.regExp` (src/schema-dialects.ts): {@link linearRegExp}, each test adding its steps by `spend` — a
 * `pattern`'s string, a `patternProperties` name (its keys' loop counts the key, not the match).
 */
export function weighedRegExp(spend: Spend): ((pattern: string, flags: string) => LinearRegExp) & { code: string } {
  const regExp = (pattern: string, flags: string): LinearRegExp => {
    const matcher = linearRegExp(pattern, flags);
    const perCharacter = matcher instanceof RegExp ? NATIVE : RE2_PROGRAM * (matcher.programs ?? 1);
    return {
      test: (text: string) => {
        if (text.length > FREE) spend((text.length - FREE) * perCharacter);
        return matcher.test(text);
      },
      toString: () => String(matcher),
    };
  };
  return Object.assign(regExp, { code: 'weighedRegExp' });
}
