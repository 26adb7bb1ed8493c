/**
 * What one JSON Schema check may cost on a value from outside (src/schema-dialects.ts gives both to every Ajv).
 *
 * Every check runs with Ajv's `allErrors` (its verdict: Ajv's first-error code skips keywords in places, see
 * docs/security.md), and such a check builds one error object per problem: 300,000 empty objects against a
 * `required` of three were 900,000 errors (0.5 s, ~1 GB), a failing `$ref` or `anyOf` chain of a 1 KB schema a
 * million. {@link boundErrors} stops a check once it holds more than {@link SCHEMA_ERRORS_MAX} errors at once: the
 * value is refused (src/schema.ts), never let through. Below the bound the check is Ajv's own, verdict and errors.
 * `uniqueItems` compared every pair of items that are objects or arrays (20,000 objects 6 s, passing values too):
 * {@link uniqueItems} finds a duplicate by each item's structure, in time linear in the items. `enum` compared the
 * value with every member (20,000 object members × 100,000 items: 51–63 s): src/schema-enum.ts looks it up.
 */
import { _, type Ajv, Name, str, type CodeKeywordDefinition, type ErrorObject, type KeywordCxt } from 'ajv';
import { safeKey } from './crypto.js';
import { startAsyncCheck, stateOf, startCheck, type CheckState } from './schema-check.js';
import { countSteps, resumes, segments } from './schema-steps.js';
import { childrenOf, constKeyword, enumKeyword, equal } from './schema-enum.js';
import { weighedRegExp, weighKeywords } from './schema-weights.js';

/**
 * The steps of an error made (held or dropped): ~40 ns (10^8 errors made and dropped by a passing union: 4.1 s). A
 * called check's errors appended (`vErrors.concat`) copy all held: as many steps as errors held then.
 */
const ERROR_STEPS = 30;

/**
 * The steps of an `await` Ajv writes in an `$async` check (a call of an `$async` schema's check), beside its
 * statements: resolved, ~160 ns (an async call and its await, 2^20 of them); rejected, ~8–20 µs (the awaited check's
 * ValidationError made, its stack captured with its async frames, the promise rejected and caught: each `$async`
 * caller makes a new one). Counted as one statement, a check of 61,000 rejected awaits was ~620,000 steps and ran
 * ~1 s; 250,000 of them 3.8 s (atk-async-await-weight).
 */
const AWAIT_STEPS = 200;
const REJECTED_STEPS = 10_000;

/**
 * How many errors one check may hold at once. An `anyOf` branch that fails holds its errors until another branch
 * passes: a valid value may pass through more than this many in one branch (a union of arrays, 10,000 items of the
 * second kind), and is refused, saying so.
 */
export const SCHEMA_ERRORS_MAX = 10_000;

/**
 * How many steps of work one check may do (src/schema-steps.ts): each compiled check's start weighs its statements
 * (Ajv writes a function for each `$ref` target, `inlineRefs: false` in src/schema-dialects.ts, and a dynamic
 * reference's), each iteration of a loop Ajv writes the statements of its body, `uniqueItems` its items. Counted as
 * calls alone, a `$ref` chain of k `allOf` pairs called 2^k checks and a tree of a recursive union (zod's
 * discriminated union of nodes, 367 bytes of schema) 2^depth for a passing value (26 levels, 778 bytes: 5 s); and
 * the work inside a call was not counted: the chain of 20 pairs with a leaf `{items: {type: string}}` over 10,000
 * strings (40 KB) took 9 s under a bound of 4,000,000 calls. A step is ~0.3–2 ns of a loop or a passing keyword,
 * an error made 30 ({@link ERROR_STEPS}), a key of a `for…in` 100, an item `uniqueItems` reads 400: the shapes of
 * atk-round-ref-chain-loops stop within ~0.1–0.5 s. Ordinary large values, counted (`npx tsx` of the test's shapes,
 * one check each): 1,000,000 strings in an array 4M steps, a map of 200,000 keys 21M, 100,000 rows of a
 * three-variant `anyOf` of `$ref`s (6.3 MB) 122M (~0.15 s), 80,000 events of a ten-variant `oneOf` of `$ref`s with
 * four `$ref` fields each (9.6 MB; the 4,000,000 calls let ~80,000 smaller ones through) 197M (~0.7–1 s: each
 * failing variant makes errors). 4 MB of any of these is under 80M.
 * Keywords that read a whole string or an object's keys add steps by what they read (src/schema-weights.ts). Each
 * check counts its own steps: an `$async` check, which other checks run beside while it awaits, a count of its own
 * ({@link newAsyncCheck}).
 */
export const SCHEMA_STEPS_MAX = 250_000_000;

const TOO_MANY = `the check stopped at more than ${SCHEMA_ERRORS_MAX.toLocaleString('en-US')} errors at once (the value, or a branch of its schema, fails in more places): refused without finishing`;
const TOO_LONG = `the check stopped at more than ${SCHEMA_STEPS_MAX.toLocaleString('en-US')} steps of work (its schema's branches, references and loops, applied to the value): refused without finishing`;

/**
 * Why a check stopped at one of its bounds (the value is refused) and the errors it held then, or undefined when
 * `error` is another (a check's own failure: it rejects the validation, which refuses the call).
 */
export function stoppedCheck(
  error: unknown,
): { readonly why: string; readonly errors: readonly ErrorObject[] } | undefined {
  if (!(error instanceof RangeError) || (error.message !== TOO_MANY && error.message !== TOO_LONG)) return undefined;
  return { why: error.message, errors: Array.isArray(error.cause) ? (error.cause as ErrorObject[]) : [] };
}

/** Why a check stopped, as an issue: at its bound of errors held, or of steps. */
export const STOPPED_ISSUE = TOO_MANY;
export const STOPPED_STEPS_ISSUE = TOO_LONG;

/**
 * How much code one compilation may write: Ajv writes a function for each reference URI, each holding its target's
 * subtree, so references spelled apart (`#/$defs/x`, `#/%24defs/x`) or pointing into nested levels multiply the
 * code (a 28 KB schema, 60 MB of code, 7.2 s). Past it the schema does not compile (~0.5–1 s of writing code; an ordinary
 * schema writes 15–30 times its text: a 130 KB schema compiles).
 */
export const SCHEMA_CODE_MAX = 4_000_000;

/** A check's count of steps. */
interface Count {
  steps: number;
}

/**
 * `cur`, the count of the check running now, read by every compiled check (through its Ajv, {@link withBounds}) at
 * its start, and by {@link spend}: `sync`, the one count of the synchronous checks, each starting it at zero (a check
 * runs alone, from start to end: no count made for it), or an `$async` check's own (see {@link newAsyncCheck}); and
 * the code written by the compilation running now.
 */
const sync: Count = { steps: 0 };
const work: { cur: Count; readonly sync: Count; code: number } = { cur: sync, sync, code: 0 };
const WORK_KEY = '$toolgateWork';

/**
 * The count a compiled function counts into: `self.$toolgateWork.cur` read at its start (src/schema-steps.ts
 * `countSteps`), its own local, so an `$async` check's function counts into its check's count after an await too.
 */
const COUNT = '$toolgateCount';

/**
 * Ajv's logger without its code: on a failed compilation (a schema past the bound of code, above) Ajv printed the
 * whole function it had written to stderr (15 MB for a 973 KB schema), each time the schema was presented.
 */
export const ajvLogger = {
  log: (...args: unknown[]): void => console.log(...args),
  warn: (...args: unknown[]): void => console.warn(...args),
  error: (...args: unknown[]): void => {
    if (args[0] === 'Error compiling schema, function code:') console.error('toolgate: a JSON Schema did not compile');
    else console.error(...args);
  },
};

/** What {@link withBounds} reads and changes of an Ajv. */
interface Keywords {
  getKeyword(keyword: string): ReturnType<Ajv['getKeyword']>;
  removeKeyword(keyword: string): unknown;
  addKeyword(definition: CodeKeywordDefinition): unknown;
  readonly formats: Readonly<Record<string, unknown>>;
  addFormat(name: string, format: (text: string) => boolean): unknown;
  readonly RULES: { readonly rules: readonly { readonly rules: readonly { readonly keyword: string }[] }[] };
}

/**
 * An Ajv with this module's bounds: the count of steps its checks keep, the linear `uniqueItems`, `enum` and `const`
 * looked up (src/schema-enum.ts).
 */
export function withBounds<A extends Keywords>(ajv: A): A {
  Object.defineProperty(ajv, WORK_KEY, { value: work });
  // Ajv's `uniqueItems` compared every pair of object or array items (20,000 objects 6 s, a passing value too).
  replaceKeyword(ajv, uniqueItems);
  // Ajv's `enum` compared the value with every member (20,000 object members × 100,000 items: ~51 s).
  replaceKeyword(ajv, enumKeyword);
  replaceKeyword(ajv, constKeyword);
  // Keywords whose one statement reads a whole string or object's keys count that work (src/schema-weights.ts).
  weighKeywords(ajv, (definition) => replaceKeyword(ajv, definition), spend);
  return ajv;
}

/** Ajv's `code.regExp` (src/schema-dialects.ts): linear-time patterns, each test counting its steps. */
export const regExpWeighed = weighedRegExp(spend);

/** Ajv's keyword replaced by `definition` where it stood among its type's keywords (its errors in Ajv's order). */
function replaceKeyword(ajv: Keywords, definition: CodeKeywordDefinition): void {
  const group = ajv.RULES.rules.find(({ rules }) => rules.some(({ keyword }) => keyword === definition.keyword));
  const at = group?.rules.findIndex(({ keyword }) => keyword === definition.keyword) ?? -1;
  const before = group?.rules[at + 1]?.keyword;
  ajv.removeKeyword(definition.keyword as string);
  ajv.addKeyword(before === undefined ? definition : { ...definition, before });
}

/**
 * Ajv's generated code (its `code.process` hook) with every place its error count grows checked against
 * {@link SCHEMA_ERRORS_MAX} — an error added (`errors++`), a called check's errors appended (`errors =
 * vErrors.length`) — and the steps of every compiled check's start and of every iteration of its loops
 * (src/schema-steps.ts) counted against {@link SCHEMA_STEPS_MAX}. Only code is changed; in a string literal only
 * `*\/` (see below). Any other change of the count this does not know, a loop it does not know, or a function whose
 * start it does not find (another Ajv's code), throws: the schema does not compile, rather than be unbounded.
 */
export function boundErrors(code: string): string {
  work.code += code.length;
  if (work.code > SCHEMA_CODE_MAX)
    throw new Error(
      `the schema compiles to more than ${SCHEMA_CODE_MAX.toLocaleString('en-US')} characters of code (its references multiply its subschemas): not compiled`,
    );
  const stop = `throw new RangeError(${JSON.stringify(TOO_MANY)},{cause:vErrors});`;
  const long = `throw new RangeError(${JSON.stringify(TOO_LONG)},{cause:vErrors});`;
  const counted = countSteps(
    code,
    (weight, start) =>
      (start ? `const ${COUNT}=self.${WORK_KEY}.cur;` : '') +
      (weight === 1
        ? `if(++${COUNT}.steps>${SCHEMA_STEPS_MAX}){${long}}`
        : `if((${COUNT}.steps+=${weight})>${SCHEMA_STEPS_MAX}){${long}}`),
  );
  const starts = counted.starts;
  // After each await of an `$async` check, its count is the one running again (see newAsyncCheck), and the await
  // counted by what it cost ({@link AWAIT_STEPS}, {@link REJECTED_STEPS}).
  const resume = `self.${WORK_KEY}.cur=${COUNT};`;
  const weighed = (steps: number): string => `${resume}if((${COUNT}.steps+=${steps})>${SCHEMA_STEPS_MAX}){${long}}`;
  const resumed = resumes(counted.code, weighed(AWAIT_STEPS), weighed(REJECTED_STEPS));
  let out = '';
  let functions = 0;
  let trivial = 0;
  for (const [part, literal] of segments(resumed)) {
    if (literal) {
      // Ajv writes a schema's `$id` into a comment (`/*# sourceURL="…" */`) once `code.process` is set, and a JSON
      // string does not escape `*/`: `$id: "x*/return!0;/*"` ended the comment and became the check's first
      // statement (every value passed; any code ran). `\/` is `/` in a string literal, and closes no comment.
      out += part.replaceAll('*/', '*\\/');
      continue;
    }
    // A check of a schema that constrains nothing (`{}`, annotations only) counts no errors and calls nothing.
    functions += [...part.matchAll(/(?<![\w$.])function\s*[\w$]*\s*\(/g)].length;
    trivial += [...part.matchAll(/\{(?:[\w$]+\.errors = null;return true;|return data;)\}/g)].length;
    const bounded = part
      .replace(/(?<![\w$.])errors\+\+;/g, `if(++errors>${SCHEMA_ERRORS_MAX}){${stop}}${COUNT}.steps+=${ERROR_STEPS};`)
      .replace(
        /(?<![\w$.])errors = vErrors\.length;/g,
        `errors = vErrors.length;if(errors>${SCHEMA_ERRORS_MAX}){${stop}}${COUNT}.steps+=errors;`,
      );
    for (const change of bounded.matchAll(/(?<![\w$.])errors\s*(\+\+|--|[-+*]?=(?!=))\s*([^;]*);/g))
      if (change[1] !== '=' || !/^(?:0|_errs\d+|vErrors\.length)$/.test(change[2]!))
        throw new Error(
          `toolgate cannot bound this schema's check (Ajv's code changes its error count as "${change[0]}")`,
        );
    if (/(?<![\w$.+])\+\+errors(?!>)/.test(bounded))
      throw new Error("toolgate cannot bound this schema's check (Ajv's code counts its errors otherwise)");
    out += bounded;
  }
  if (starts + trivial === 0 || starts < functions - trivial)
    throw new Error("toolgate cannot bound this schema's check (a compiled check whose start it cannot count)");
  return out;
}

/**
 * `uniqueItems` as JSON Schema decides it, worded as Ajv words it, found in linear time. Items whose schema allows
 * only scalar types (Ajv's own fast case; not beside `prefixItems`, whose items `items` does not type): the items of
 * those types, by their JSON text, named as Ajv names them (the last item equal to a later one, and the first such
 * later one); Ajv kept them as keys of an object, where `"__proto__"` is no key: two of them passed. Any other: each
 * item that is plain data (null, a boolean, a string, a number, an array of such, an object of Object.prototype whose
 * keys are own enumerable data properties: all JSON text makes) by an id of its structure (equal ids: equal as JSON
 * Schema compares them, keys in any order, -0 as 0), any other item by Ajv's `equal` against every item; named as
 * Ajv's pairwise loop names them (the last item equal to an earlier one, and the latest such earlier one). Ajv's
 * `equal` compared an own `constructor` key by identity (two equal `{"constructor": {…}}` passed) and called an own
 * `valueOf` or `toString` key; and with a `constructor` key or a number past a double (`1e999`) an item was compared
 * with every other: quadratic again.
 */
const uniqueItems: CodeKeywordDefinition = {
  keyword: 'uniqueItems',
  type: 'array',
  schemaType: 'boolean',
  error: {
    message: ({ params }) =>
      str`must NOT have duplicate items (items ## ${params['j']} and ${params['i']} are identical)`,
    params: ({ params }) => _`{i: ${params['i']}, j: ${params['j']}}`,
  },
  code(cxt: KeywordCxt) {
    if (cxt.schema !== true) return;
    const items: unknown = cxt.parentSchema['items'];
    const types = cxt.parentSchema['prefixItems'] === undefined ? typesOf(items) : [];
    const scalar = types.length > 0 && !types.some((type) => type === 'object' || type === 'array');
    const find = cxt.gen.scopeValue('func', {
      ref: scalar ? (data: readonly unknown[]) => duplicateScalar(data, types) : duplicatePair,
    });
    // The check's root value (`rootData`, in every function Ajv writes) keys the structural ids the check keeps.
    const pair = cxt.gen.const('pair', _`${find}(${cxt.data}, ${ROOT})`);
    cxt.setParams({ i: _`${pair}[0]`, j: _`${pair}[1]` });
    cxt.fail(_`${pair} !== undefined`);
  },
};

/**
 * The types an `items` schema allows, as Ajv reads them for its scalar case (its `getSchemaTypes`: `type`, a name or
 * a list, and OpenAPI's `nullable: true` adding null); none for a tuple, a boolean or a schema without `type`.
 */
function typesOf(items: unknown): string[] {
  if (typeof items !== 'object' || items === null || Array.isArray(items)) return [];
  const { type, nullable } = items as { type?: unknown; nullable?: unknown };
  const types = Array.isArray(type)
    ? type.filter((t): t is string => typeof t === 'string')
    : typeof type === 'string'
      ? [type]
      : [];
  if (nullable === true && !types.includes('null')) types.push('null');
  return types;
}

/**
 * Ajv's scalar case: among the items of `types` (others are the `items` keyword's errors), the pair `[i, j]` (i < j)
 * Ajv names, or undefined.
 */
function duplicateScalar(items: readonly unknown[], types: readonly string[]): readonly [number, number] | undefined {
  spend(items.length * ITEM_STEPS);
  const seen = new Map<string, number>();
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (!types.some((type) => ofType(item, type))) continue;
    // A number by its own words (JSON writes Infinity, a number past a double here, as null).
    const text = typeof item === 'number' ? String(item) : JSON.stringify(item);
    const key = safeKey(text); // a text past 16,383 characters by its digest (src/crypto.ts)
    const later = seen.get(key);
    if (later !== undefined) return [i, later];
    seen.set(key, i);
  }
  return undefined;
}

/**
 * Ajv's type check of a scalar item, as the gate's Ajv has it (`strict: false` turns its `strictNumbers` off:
 * Infinity, an upstream's `1e400`, is a number and an integer). Checked as finite, two `1e400` passed `uniqueItems`.
 */
function ofType(item: unknown, type: string): boolean {
  if (type === 'null') return item === null;
  if (type === 'number') return typeof item === 'number';
  if (type === 'integer') return typeof item === 'number' && !(item % 1) && !Number.isNaN(item);
  return typeof item === type;
}

/** The pair `[i, j]` (j < i) of equal items Ajv's pairwise loop would name, or undefined: all items differ. */
export function duplicatePair(items: readonly unknown[], root?: unknown): readonly [number, number] | undefined {
  if (items.length < 2) return undefined;
  spend(items.length * ITEM_STEPS);
  const ids = idsOf(root);
  const last = new Map<number, number>();
  const other: number[] = [];
  let found: [number, number] | undefined;
  for (let i = 0; i < items.length; i++) {
    const id = idOf(items[i], ids);
    if (id === undefined) {
      other.push(i);
      continue;
    }
    const before = last.get(id);
    if (before !== undefined) found = [i, before];
    last.set(id, i);
  }
  // An item that is not plain data is compared by Ajv's own `equal` with every other item.
  for (const i of other)
    for (let j = 0; j < items.length; j++)
      if (j !== i && equal(items[i], items[j])) {
        const pair: [number, number] = i > j ? [i, j] : [j, i];
        if (found === undefined || pair[0] > found[0] || (pair[0] === found[0] && pair[1] > found[1])) found = pair;
      }
  return found;
}

/** The steps of an item `uniqueItems` reads: ~430 ns (10,000 numbers read 1,024 times: 4.3 s). */
const ITEM_STEPS = 400;

/**
 * `n` steps of work outside Ajv's code (`uniqueItems` reading each item, src/schema-weights.ts's strings and keys),
 * counted as Ajv's loops are: at 2^20 places, a keyword over 10,000 items is 10^10 reads.
 */
function spend(n: number): void {
  if ((work.cur.steps += n) > SCHEMA_STEPS_MAX) throw new RangeError(TOO_LONG, { cause: [] });
}

/** The structural ids of one check: each text interned once, each array's and object's id (or none) kept. */
type Ids = NonNullable<CheckState['ids']>;

const ROOT = new Name('rootData');

/**
 * The ids kept for `root`'s check, made by the first `uniqueItems` it runs (src/schema-check.ts): a recursive schema
 * checks `uniqueItems` at every level of a tree, and each level walked its whole subtree again (1,000 levels over
 * 50,000 numbers, 293 KB, 15.7 s). Made afresh for each check: a value changed between checks is read anew.
 */
function idsOf(root: unknown): Ids {
  const state = stateOf(root);
  return (state.ids ??= { ids: new Map(), of: new WeakMap() });
}

/** The characters of code the last compilation wrote (test/attacks: a compilation's cost, without a clock). */
export function codeWritten(): number {
  return work.code;
}

/**
 * The steps the check running now counted, or the last to run (tests: a check's work, without a clock; read inside an
 * `$async` check, by a getter of its value, its own).
 */
export function stepsCounted(): number {
  return work.cur.steps;
}

/**
 * Starts a synchronous check of `root` (src/schema.ts: before each check, and each compilation with its schema, whose
 * meta-schema checks count too): no steps counted, nothing kept from before (src/schema-check.ts). It runs alone,
 * from start to end: it counts into the one count of synchronous checks, set to zero (no object made for it).
 */
export function newCheck(root: unknown): void {
  work.sync.steps = 0;
  work.cur = work.sync;
  work.code = 0;
  startCheck(root);
}

/**
 * Starts an `$async` check of `root` and gives its state (src/schema-check.ts `startAsyncCheck`). It awaits at each
 * `$ref` to an `$async` schema, and other checks start and run meanwhile: it counts into a count of its own, made
 * now. Each of its compiled functions reads that count at its start (the running one's, `cur`: its caller's) and
 * counts into it to its end, across its awaits; after each await (resolved or rejected) it makes it the running one
 * again before any other code of the check runs (src/schema-steps.ts `resumes`), for the functions it calls and the
 * keywords' {@link spend}. So no other check's start sets its count to zero (each did: one such check did 65 times
 * the bound and passed), and no other check stopped at the bound leaves its count above it for this one (a valid
 * check resuming then was refused). A function of it that ends before its caller resumes counted into the same count.
 */
export function newAsyncCheck(root: unknown): CheckState | undefined {
  work.cur = { steps: 0 };
  work.code = 0;
  return startAsyncCheck(root);
}

/**
 * The id of `value`'s structure when it is plain JSON data (see {@link uniqueItems}), or undefined. `ids` interns
 * each structure's text once, its members by their ids, and keeps each array's and object's: linear in the value
 * for the whole check. As deep as the value (a value too deep for the stack throws, and the check with it: the call
 * is refused).
 */
function idOf(value: unknown, ids: Ids): number | undefined {
  // -0 is "0"; NaN, Infinity (JSON.parse's 1e999) their own words, each equal only to itself as Ajv's `equal` has it.
  if (typeof value === 'number') return interned(String(value), ids);
  if (value === null || typeof value === 'boolean' || typeof value === 'string')
    return interned(JSON.stringify(value), ids);
  if (typeof value !== 'object') return undefined;
  const known = ids.of.get(value);
  if (known !== undefined) return known ?? undefined;
  const id = structureId(value, ids);
  ids.of.set(value, id ?? null);
  return id;
}

/**
 * The id of an array's or object's structure (plain data as src/schema-enum.ts `childrenOf` reads it, the one reader
 * of both keywords; any other item is compared by Ajv's `equal`), or undefined.
 */
function structureId(value: object, ids: Ids): number | undefined {
  const read = childrenOf(value);
  if (read === undefined) return undefined;
  const childIds: number[] = [];
  for (const child of read.values) {
    const id = idOf(child, ids);
    if (id === undefined) return undefined;
    childIds.push(id);
  }
  if (Array.isArray(value)) return interned(`[${childIds.map((id) => `${id},`).join('')}`, ids);
  const members = read.keys.map((key, i): [string, number] => [key, childIds[i]!]);
  members.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return interned(`{${members.map(([key, id]) => `${JSON.stringify(key)}:${id}`).join(',')}`, ids);
}

/** The id of a structure's text, interned. */
function interned(text: string, ids: Ids): number {
  const key = safeKey(text); // a text past 16,383 characters by its digest (src/crypto.ts)
  let id = ids.ids.get(key);
  if (id === undefined) ids.ids.set(key, (id = ids.ids.size));
  return id;
}
