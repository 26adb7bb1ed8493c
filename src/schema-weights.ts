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
 * A call's own cost (a format's validator, a pattern's test) is counted in steps of {@link CALL_NS_PER_STEP} ns, a
 * quarter of the characters' scale (a step ~1 ns, above): a statement of Ajv's code, one step, costs ~2 ns in an
 * ordinary check (40,000 events of a ten-variant union: 100.5M steps in 222 ms of CPU without their `date-time`), and a
 * call's cost is paid at every item of an ordinary array (those events' 400,000 `date-time` calls, +423 ms): counted
 * at 1 ns a step they would refuse those 4.8 MB of events (544M steps); at 4, they count 214M. A shape made only of
 * such calls then runs ~1 s of CPU before the bound (atk-steps-call-costs: 0.6–1.05 s, load 3.4).
 */
const CALL_NS_PER_STEP = 4;

/** The steps of a call of `ns` (see {@link CALL_NS_PER_STEP}). */
const callSteps = (ns: number): number => Math.ceil(ns / CALL_NS_PER_STEP);

/**
 * A pattern test's own cost beside its characters, in ns: a native RegExp's call ~30; an RE2 program's ~200–250
 * before it reads a character, ~400–500 on 14 (the 16 characters {@link FREE} leaves uncounted at 15 each) —
 * `linearRegExp(p, 'u').test` on 4- and 14-character strings, 50,000 calls, the least of 7 rounds, load ~4
 * (2026-12-07 09:37). Uncounted, a chain of references applying a translated `pattern` to 2,000 strings at 65,536
 * places ran for tens of seconds before the bound.
 */
const NATIVE_CALL = callSteps(30);
const RE2_CALL = callSteps(500);

/**
 * A format's validator (ajv-formats, full mode; src/schema-dialects.ts's own), the most ns a character on
 * 1,000,000-character strings of the kinds tried (letters, `a.a.…`, `/a/a…`, a URI's tail, base64, a date-time's):
 * `regex` compiles the string as a RegExp (40 on a URI), `email` reads `/a/a…` at 36, `uri-reference` a UUID's
 * letters at 18. A format not here (one added later, `int64` on a string): {@link FORMAT_ANY}. Beside its characters,
 * each call's own cost ({@link FORMAT_CALL_NS}).
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
 * A format validator's own cost per call, in ns, on short strings, valid or not (the larger): `date-time`
 * ~1,100 ns (its Date built and read), `ipv6` ~700 (a long expression), `regex` ~220 on a pattern (and
 * {@link REGEX_REFUSED} more on a string that is not one) — the validators of src/schema-dialects.ts's Ajv on 2–3 strings of each kind,
 * 100,000 calls, the least of 7 rounds, load ~4 (2026-12-07 09:37; a quiet core may take half). Counted as its one
 * statement's step, a chain of references applying `{items: {format: 'date-time'}}` to 2,000 strings at 65,536
 * places ran 16.4 s of CPU before the bound (`ipv6` 14.9 s); `regex` on strings that are not patterns would run
 * minutes. A format not here: {@link FORMAT_ANY_CALL_NS}. Counted in steps of {@link CALL_NS_PER_STEP} ns.
 */
const FORMAT_CALL_NS: Readonly<Record<string, number>> = {
  'date-time': 1_100,
  date: 300,
  time: 450,
  duration: 170,
  uri: 220,
  'uri-reference': 150,
  'uri-template': 75,
  url: 400,
  email: 110,
  hostname: 130,
  ipv4: 60,
  ipv6: 700,
  regex: 220,
  uuid: 225,
  'json-pointer': 45,
  'json-pointer-uri-fragment': 60,
  'relative-json-pointer': 45,
  byte: 80,
};
const FORMAT_ANY_CALL_NS = 10_000;

/**
 * `regex` on a string that is not an ECMAScript pattern: V8 makes a SyntaxError (its stack captured) and the validator
 * catches it, ~10,000 ns against ~220 for a pattern. Counted after the call, by its verdict: under `not` (or in a
 * union's failing branch), 2,000 such strings at 4,096 places ran 62 s of CPU before the bound.
 */
const REGEX_REFUSED = callSteps(10_000);

/**
 * A key `Object.keys` collects: ~1 ns from an object of up to ~1,000 keys (V8 keeps its keys in order), ~230–600 ns
 * from a larger one (a dictionary, its keys sorted at each call: 10,000 keys 2.3 ms, 100,000 keys 60 ms).
 */
const KEY_SMALL = 1;
const KEY_LARGE = 250;
const SMALL_OBJECT = 1_020;

/** The steps of one call reading `text`: `perCall`, and `perCharacter` for each character past the first {@link FREE}. */
function stringSteps(text: string, perCharacter: number, perCall: number): number {
  return perCall + (text.length > FREE ? (text.length - FREE) * perCharacter : 0);
}

/** A keyword's steps on a string: per character past the first {@link FREE}, and per call. */
type Weight = readonly [perCharacter: number, perCall: number];

/** What {@link weighKeywords} reads of an Ajv. */
interface Keywords {
  getKeyword(keyword: string): ReturnType<Ajv['getKeyword']>;
  readonly formats: Readonly<Record<string, unknown>>;
  addFormat(name: string, format: (text: string) => boolean): unknown;
}

/**
 * The keywords above of `ajv` with their steps counted by `spend`; `replace` puts a definition where Ajv's own stood
 * (src/schema-bounds.ts, so errors keep Ajv's order).
 */
export function weighKeywords(ajv: Keywords, replace: (definition: CodeKeywordDefinition) => void, spend: Spend) {
  // A string's steps: its characters past the first FREE, and a call's own (a format's); nothing else is weighed.
  const weigh = (data: unknown, perCharacter: number, perCall = 0): void => {
    if (typeof data !== 'string') return;
    const steps = stringSteps(data, perCharacter, perCall);
    if (steps > 0) spend(steps);
  };
  const weighed = (keyword: string, weight: (cxt: KeywordCxt, ruleType?: string) => Weight | undefined): void => {
    const own = ownKeyword(ajv, keyword);
    const code = own.code.bind(own);
    replace({
      ...own,
      keyword,
      code(cxt: KeywordCxt, ruleType?: string) {
        const steps = weight(cxt, ruleType);
        if (steps !== undefined) {
          const [perCharacter, perCall] = steps;
          const at = cxt.gen.scopeValue('func', { ref: weigh });
          cxt.gen.code(
            perCall > 0 ? _`${at}(${cxt.data}, ${perCharacter}, ${perCall})` : _`${at}(${cxt.data}, ${perCharacter})`,
          );
        }
        code(cxt, ruleType);
      },
    });
  };
  // After src/schema-enum.ts's `enum` and `const` (src/schema-bounds.ts): a string is hashed or compared whole.
  weighed('enum', () => [ENUM, 0]);
  weighed('const', () => [ENUM, 0]);
  weighed('maxLength', () => [LENGTH, 0]);
  weighed('minLength', () => [LENGTH, 0]);
  const regex = ajv.formats['regex'];
  if (typeof regex === 'function') {
    const valid = regex as (text: string) => boolean;
    ajv.addFormat('regex', (text: string): boolean => {
      if (valid(text)) return true;
      spend(REGEX_REFUSED);
      return false;
    });
  }
  // A format Ajv does not know (a UI hint, `textarea`) is not checked, nor one of numbers (`int32`) on a string.
  weighed('format', ({ schema, $data, it }, ruleType) => {
    if (ruleType === 'number') return undefined;
    if ($data) return [FORMAT_ANY, callSteps(FORMAT_ANY_CALL_NS)];
    const known: unknown = typeof schema === 'string' ? it.self.formats[schema] : undefined;
    if (known === undefined) return undefined;
    const of =
      typeof known === 'object' && known !== null && !(known instanceof RegExp)
        ? (known as { type?: string }).type
        : undefined;
    if ((of ?? 'string') !== 'string') return undefined;
    const name = schema as string;
    return [FORMAT[name] ?? FORMAT_ANY, callSteps(FORMAT_CALL_NS[name] ?? FORMAT_ANY_CALL_NS)];
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
    const native = matcher instanceof RegExp;
    const perCharacter = native ? NATIVE : RE2_PROGRAM * (matcher.programs ?? 1);
    const perCall = native ? NATIVE_CALL : RE2_CALL * (matcher.programs ?? 1);
    return {
      test: (text: string) => {
        spend(stringSteps(text, perCharacter, perCall));
        return matcher.test(text);
      },
      toString: () => String(matcher),
    };
  };
  return Object.assign(regExp, { code: 'weighedRegExp' });
}
