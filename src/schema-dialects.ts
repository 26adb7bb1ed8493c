/**
 * Which Ajv reads a JSON Schema (src/schema.ts compiles it): the dialect it declares (`$schema`: draft-07, 2019-09,
 * 2020-12) or, declaring none, the keywords it uses; what no Ajv would read as the spec does is refused here, by
 * name, before anything compiles — never half read. Every Ajv checks JSON Schema's formats (ajv-formats).
 */
import { Ajv } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { ajvLogger, boundErrors, newCheck, regExpWeighed, withBounds } from './schema-bounds.js';

/** A JSON Schema object: draft-07, 2019-09 or 2020-12 (its `$schema`, or none: the keywords it uses tell). */
export type JsonSchema = { readonly [keyword: string]: unknown };

/**
 * How deep the walks below read a schema: levels of subschemas and arrays (the data of `enum`, `const`, `default`
 * and `examples` aside). A schema nested deeper, or holding a cycle, is refused by {@link ajvFor} first, naming it.
 */
export const SCHEMA_DEPTH_MAX = 64;

/** The Ajv a schema is compiled by. */
export type SchemaAjv = Ajv | Ajv2019 | Ajv2020;

// `pattern` and `patternProperties` are matched in linear time (src/schema-regexp.ts), not by a backtracking RegExp;
// a check stops at a bounded number of errors held and of steps of work (src/schema-bounds.ts).
const AJV_OPTIONS = {
  allErrors: true,
  strict: false,
  coerceTypes: false,
  useDefaults: false,
  inlineRefs: false,
  logger: ajvLogger,
  code: { regExp: regExpWeighed, process: boundErrors },
} as const;

/**
 * An Ajv with the formats of JSON Schema checked (ajv-formats, full mode). Without them `format` was ignored: a
 * tool whose schema says `format: "uuid"` or `"email"` (zod 4's `z.uuid()`, `z.email()`) ran with any string. A
 * format Ajv does not know (a UI hint: `"textarea"`) is still ignored, with Ajv's warning.
 */
function withFormats<A extends SchemaAjv>(ajv: A): A {
  // CommonJS: Node's default import is its module.exports, which carries the plugin as `default` too.
  // Formats only: not ajv-formats' formatMinimum / formatMaximum (see NOT_READ).
  formats.default(ajv as Ajv, { mode: 'full', keywords: false });
  // ajv-formats' `url` (not a JSON Schema format: its own) is a regular expression whose time grows with the
  // square of the text (80,000 characters 360 ms): arguments a model wrote would hold the gate. The same check in
  // linear time (URL_HOST), and the URL one the WHATWG parser reads. Without URL_HOST (an http(s)/ftp URL without
  // whitespace that the parser reads) it let through what ajv-formats' refuses: loopback, private and link-local
  // addresses (http://169.254.169.254/, the cloud metadata service) and hosts without a top-level domain (localhost).
  ajv.addFormat('url', (text: string) => URL_START.test(text) && URL_HOST.test(text) && URL.canParse(text));
  // ajv-formats' `byte` has the flags `gm`: `^` and `$` matched at every line, so a string was base64 when one of
  // its lines (an empty one too) was: `"$(rm -rf /)\n"` passed. The same expression, of the whole string.
  ajv.addFormat('byte', BASE64);
  // OpenAPI's int64 was any integer (1e300, 2^63: past a signed 64-bit integer) and float any number (1e39: past a
  // 32-bit float's largest).
  ajv.addFormat('int64', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 63) && n < 2 ** 63,
  });
  ajv.addFormat('float', { type: 'number', validate: (n: number) => Number.isFinite(Math.fround(n)) });
  return withBounds(ajv);
}

const URL_START = /^(?:https?|ftp):\/\/\S+$/i;
// ajv-formats' `url` expression (dperini's), its user information `\S+(?::\S*)?@` written `\S+@` (the same strings:
// `:` is not whitespace): the two ways to split it at each `:` were the square. Linear once URL_START has held (no
// whitespace, so the path `[^\s]*` never backs off): each `@` is tried once, with the host that follows it.
const URL_HOST =
  /^(?:https?|ftp):\/\/(?:\S+@)?(?:(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}(?:\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4]))|(?:(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)(?:\.(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)*(?:\.(?:[a-z\u{00a1}-\u{ffff}]{2,})))(?::\d{2,5})?(?:\/[^\s]*)?$/iu;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/**
 * How many schemas one Ajv compiles before a fresh one takes its place. An Ajv keeps in its `scope` every function,
 * schema, RE2 matcher and `enum` table any compilation added (the compiled code reads them there; removeSchema takes
 * none out), so a check the gate dropped (past the bound of kept checks, never kept, its tool gone) lived as long as
 * the process: an upstream relisting new schemas grew it without end. A retired Ajv goes with the last of its checks.
 * A fresh one costs ~25 ms (its formats, its meta-schema compiled at its first schema).
 */
export const AJV_COMPILATIONS = 1_000;

/** The Ajv of a dialect now, and how many schemas it was handed. */
interface Serving<A> {
  ajv: A | undefined;
  handed: number;
}
const ajv07: Serving<Ajv> = { ajv: undefined, handed: 0 };
const ajv2019: Serving<Ajv2019> = { ajv: undefined, handed: 0 };
const ajv2020: Serving<Ajv2020> = { ajv: undefined, handed: 0 };

/** The dialect's Ajv for one more compilation: a fresh one past AJV_COMPILATIONS. */
function serving<A>(serving: Serving<A>, make: () => A): A {
  if (serving.ajv === undefined || serving.handed >= AJV_COMPILATIONS) {
    const ajv = make();
    // Its meta-schema compiled now, its code counted alone, not inside the first schema it is handed (whose bound of
    // code it took 24–58K characters of: a schema near the bound compiled or not by how many came before it).
    newCheck(undefined);
    (ajv as SchemaAjv).validateSchema({});
    serving.ajv = ajv;
    serving.handed = 0;
  }
  serving.handed++;
  return serving.ajv;
}
/**
 * The Ajv that reads `schema`. One declaring its dialect (`$schema`: draft-07, 2019-09 or 2020-12) is read in it:
 * a 2020-12 schema, what zod 4's `toJSONSchema` and OpenAPI 3.1 write, did not compile in the draft-07 Ajv ("no
 * schema with key or ref"). Any other `$schema` does not compile (a dialect toolgate would half read), nor does one
 * using a keyword that constrains a value in a later dialect but means nothing in its own (ignored, it let every
 * value through: never half read). A schema declaring none: the draft-07 Ajv ignores (strict: false) the keywords
 * of 2019-09 and 2020-12 it does not implement (a schema refusing arguments with `prefixItems`, `dependentRequired`
 * or `unevaluatedProperties` let them all through; MCP's default dialect is 2020-12), so one that uses one is
 * compiled by the 2020-12 Ajv, which implements them all; one it cannot read (draft-07 tuple `items` beside them)
 * does not compile. Any other by the draft-07 Ajv.
 */
export function ajvFor(schema: JsonSchema): SchemaAjv {
  // First: past the bound every walk below answers yes to whatever it is asked (a wrong reason, or none).
  if (someSchema(schema, () => false, 0))
    throw new Error(
      `the schema nests past ${SCHEMA_DEPTH_MAX} levels of subschemas and arrays (SCHEMA_DEPTH_MAX), or holds a cycle: not read`,
    );
  const unread = NOT_READ.find((keyword) => usesKeyword(schema, [keyword], 0));
  if (unread !== undefined)
    throw new Error(`${unread} is not read by toolgate (Ajv's own keyword, in no JSON Schema dialect): never checked`);
  const dialect = dialectOf(schema);
  if (dialect === 'draft-07') return serving(ajv07, draft07);
  const misread = dynamicMisread(schema);
  if (misread !== undefined) throw new Error(misread);
  // Ajv's `contains` marks every item evaluated once it is there (2020-12: the items it matched; 2019-09: none): a
  // tuple closed with `unevaluatedItems: false` beside one let any extra item through. Not compiled.
  if (usesKeyword(schema, ['unevaluatedItems'], 0) && usesKeyword(schema, ['contains'], 0))
    throw new Error(
      'unevaluatedItems beside contains is not supported: Ajv counts every item evaluated once contains is there (it would let unevaluated items through)',
    );
  if (dialect === '2019-09') return serving(ajv2019, () => withFormats(new Ajv2019(AJV_OPTIONS)));
  // 2020-12 has no additionalItems (its Ajv ignores it): `prefixItems` closed with `additionalItems: false`, the
  // draft-07 / 2019-09 way, let every extra item through. Refused by name, as a later dialect's keyword is.
  if (usesKeyword(schema, ['additionalItems'], 0))
    throw new Error(
      `${schema['$schema'] === undefined ? 'a schema using a 2019-09 / 2020-12 keyword is read as 2020-12' : '$schema declares 2020-12'}, where additionalItems means nothing: close a prefixItems tuple with items: false (it would be ignored, never checked)`,
    );
  return serving(ajv2020, () => withFormats(new Ajv2020(AJV_OPTIONS)));
}

/**
 * The draft-07 Ajv. Its meta-schema's id is http://; a schema declaring draft-07 by https:// (a spelling DIALECTS
 * reads) did not compile ("no schema with key or ref"): that URI names the same meta-schema.
 */
function draft07(): Ajv {
  const ajv = withFormats(new Ajv(AJV_OPTIONS));
  ajv.refs['https://json-schema.org/draft-07/schema'] = 'http://json-schema.org/draft-07/schema';
  return ajv;
}

/** The dialect `schema` is read in: its `$schema`, or none (2020-12 if it uses a 2019-09 / 2020-12 keyword). */
function dialectOf(schema: JsonSchema): Dialect {
  // A subschema (an embedded resource) may declare its own dialect: it is read in the root's, so one toolgate does
  // not read was half read (a draft-03 `divisibleBy` ignored). Refused as the root's would be.
  const nested = (record: Record<string, unknown>): boolean =>
    record !== schema && record['$schema'] !== undefined && dialectNamed(record['$schema']) === undefined;
  if (someSchema(schema, nested, 0))
    throw new Error(
      'a subschema declares a $schema that is not a dialect toolgate reads (draft-07, 2019-09 or 2020-12)',
    );
  const declared = schema['$schema'];
  if (declared === undefined) return usesKeyword(schema, NEWER_KEYWORDS, 0) ? '2020-12' : 'draft-07';
  const dialect = declaredDialect(declared);
  const later = LATER_KEYWORDS[dialect].find((keyword) => usesKeyword(schema, [keyword], 0));
  if (later !== undefined)
    throw new Error(`$schema declares ${dialect}, where ${later} means nothing (it would be ignored, never checked)`);
  return dialect;
}

type Dialect = 'draft-07' | '2019-09' | '2020-12';

/** The dialect a `$schema` value names (its URI, a trailing `#` removed), or undefined: one toolgate does not read. */
function dialectNamed(declared: unknown): Dialect | undefined {
  return typeof declared === 'string' ? DIALECTS.get(declared.replace(/#$/, '')) : undefined;
}

/** The dialect a `$schema` declares: draft-07, 2019-09 or 2020-12; any other value throws (never half read). */
export function declaredDialect(declared: unknown): Dialect {
  const dialect = dialectNamed(declared);
  if (dialect === undefined)
    throw new Error(
      `$schema ${JSON.stringify(declared) ?? String(declared)} is not a dialect toolgate reads: declare draft-07, 2019-09 or 2020-12, or none`,
    );
  return dialect;
}

/** The `$schema` URIs of the dialects read (a trailing `#` removed). */
const DIALECTS = new Map<string, Dialect>([
  ['http://json-schema.org/draft-07/schema', 'draft-07'],
  ['https://json-schema.org/draft-07/schema', 'draft-07'],
  ['https://json-schema.org/draft/2019-09/schema', '2019-09'],
  ['https://json-schema.org/draft/2020-12/schema', '2020-12'],
]);

/** Keywords of JSON Schema 2019-09 / 2020-12 that constrain a value and that the draft-07 Ajv would ignore. */
const NEWER_KEYWORDS = [
  'prefixItems',
  'dependentRequired',
  'dependentSchemas',
  'minContains',
  'maxContains',
  'unevaluatedProperties',
  'unevaluatedItems',
  '$dynamicRef',
  '$dynamicAnchor',
  '$recursiveRef',
  '$recursiveAnchor',
];
/**
 * Ajv's own limits of a formatted value (ajv-formats' keywords, in no JSON Schema dialect): its comparison read a
 * date-time with `new Date`, and a value Date does not parse (a leap second 23:59:60Z, an offset +01) or whose
 * instant is 0 (1970-01-01T00:00:00Z, read as false) passed every limit. Not added; a schema using one does not
 * compile (ignored, a tool allowing dates from 2020 on ran with 1970).
 */
const NOT_READ = ['formatMinimum', 'formatMaximum', 'formatExclusiveMinimum', 'formatExclusiveMaximum'];
/** Per declared dialect, the keywords of a later one that it does not have (its Ajv would ignore them). */
const LATER_KEYWORDS: Readonly<Record<Dialect, readonly string[]>> = {
  'draft-07': NEWER_KEYWORDS,
  '2019-09': ['prefixItems', '$dynamicRef', '$dynamicAnchor'],
  '2020-12': [],
};
/** The references Ajv resolves at run time (to the root, whatever its `$async`). */
const DYNAMIC_REFS = ['$dynamicRef', '$recursiveRef'];
/**
 * The dynamic scope's keywords: the references Ajv resolves at run time and the anchors they find (an anchor alone
 * is found by the meta-schemas' own references, `$dynamicRef: "#meta"`, `$recursiveRef: "#"`, through a `$ref` to one).
 */
export const DYNAMIC_KEYWORDS = [...DYNAMIC_REFS, '$dynamicAnchor', '$recursiveAnchor'];

/**
 * Why Ajv would not resolve a `$dynamicRef` / `$recursiveRef` of `schema` as the spec does, or undefined. Ajv takes
 * `$dynamicRef: "#X"` to the first `$dynamicAnchor: X` the call has run so far (whichever argument ran it), or else to
 * the function it is compiling; the spec, to the outermost resource of the dynamic scope declaring X (or statically).
 * An anchor under `$defs` was answered by the root, and a lax sibling resource the arguments ran first answered a
 * strict one's reference. They agree when the root declares X (it runs first and is outermost), each `$dynamicAnchor`
 * is on a resource's root (the root, or a subschema with an `$id`) and one the root declares, and the resource around
 * each `$dynamicRef: "#X"` declares X on its root; `$recursiveRef` (`"#"` only) and `$recursiveAnchor: true` alike.
 */
function dynamicMisread(schema: JsonSchema): string | undefined {
  if (!usesKeyword(schema, DYNAMIC_KEYWORDS, 0)) return undefined;
  const declares = (at: Record<string, unknown>, anchor: unknown): boolean =>
    anchor === '' ? at['$recursiveAnchor'] === true : typeof anchor === 'string' && at['$dynamicAnchor'] === anchor;
  const walk = (node: unknown, resource: Record<string, unknown>, depth: number): string | undefined => {
    if (typeof node !== 'object' || node === null) return undefined;
    if (depth > SCHEMA_DEPTH_MAX)
      return `a schema with $dynamicRef or $recursiveRef nested past ${SCHEMA_DEPTH_MAX} levels is not supported`;
    if (Array.isArray(node)) {
      for (const item of node) {
        const why = walk(item, resource, depth + 1);
        if (why !== undefined) return why;
      }
      return undefined;
    }
    const record = node as Record<string, unknown>;
    const own = record === schema || typeof record['$id'] === 'string' ? record : resource;
    const anchors: [string, unknown][] = [
      ['$dynamicAnchor', record['$dynamicAnchor']],
      ['$recursiveAnchor', record['$recursiveAnchor'] === true ? '' : undefined],
    ];
    for (const [keyword, anchor] of anchors)
      if (anchor !== undefined && (own !== record || !declares(schema, anchor)))
        return `${keyword} only on the root, or on a resource's root ($id) beside the root's own: Ajv would resolve its references otherwise than the spec`;
    const refs: [string, unknown][] = [
      [
        '$dynamicRef',
        typeof record['$dynamicRef'] === 'string' ? record['$dynamicRef'].slice(1) : record['$dynamicRef'],
      ],
      ['$recursiveRef', record['$recursiveRef'] === '#' ? '' : record['$recursiveRef']],
    ];
    for (const [keyword, anchor] of refs) {
      if (anchor === undefined) continue;
      const value = record[keyword];
      const fragment =
        typeof value === 'string' && value.startsWith('#') && (keyword === '$recursiveRef') === (anchor === '');
      if (!fragment || !declares(schema, anchor) || !declares(own, anchor))
        return `${keyword} ${JSON.stringify(value)}: only to an anchor the root declares (and the resource around it, on its root), or Ajv would resolve it otherwise than the spec`;
    }
    for (const keyword of namesOf(record)) {
      if (DATA_KEYWORDS.has(keyword)) continue;
      const value = record[keyword];
      const named =
        NAMED_SUBSCHEMAS.has(keyword) && typeof value === 'object' && value !== null && !Array.isArray(value);
      for (const sub of named ? namesOf(value).map((name) => (value as Record<string, unknown>)[name]) : [value]) {
        const why = walk(sub, own, depth + 1);
        if (why !== undefined) return why;
      }
    }
    return undefined;
  };
  return walk(schema, schema, 0);
}

/** Keywords whose value is an object of subschemas by name (its keys are names, not keywords). */
const NAMED_SUBSCHEMAS = new Set([
  'properties',
  'patternProperties',
  'definitions',
  '$defs',
  'dependentSchemas',
  'dependencies',
]);
/** Keywords whose value is data, not a schema. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples']);

/**
 * Does `schema` use one of `keywords` anywhere (read as Ajv reads it: inherited keys too)? Past SCHEMA_DEPTH_MAX
 * levels (or a cycle) it is taken to: for the 2019-09 / 2020-12 keywords, the 2020-12 Ajv implements every keyword the draft-07
 * one does but tuple `items`, which it refuses to compile, never ignores (and `additionalItems`, which means
 * nothing without it); for the dynamic references, such a schema does not compile.
 */
export function usesKeyword(schema: unknown, keywords: readonly string[], depth: number): boolean {
  return someSchema(schema, (record) => keywords.some((keyword) => record[keyword] !== undefined), depth);
}

/** Does `test` hold for `schema` or one of its subschemas (walked as `usesKeyword` walks; past SCHEMA_DEPTH_MAX: taken to)? */
function someSchema(schema: unknown, test: (record: Record<string, unknown>) => boolean, depth: number): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  if (depth > SCHEMA_DEPTH_MAX) return true;
  if (Array.isArray(schema)) return schema.some((item) => someSchema(item, test, depth + 1));
  const record = schema as Record<string, unknown>;
  if (test(record)) return true;
  for (const keyword of namesOf(record)) {
    if (DATA_KEYWORDS.has(keyword)) continue;
    const value = record[keyword];
    if (NAMED_SUBSCHEMAS.has(keyword) && typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const name of namesOf(value))
        if (someSchema((value as Record<string, unknown>)[name], test, depth + 1)) return true;
    } else if (someSchema(value, test, depth + 1)) return true;
  }
  return false;
}

/**
 * Every name Ajv may read on `record`: it reads a keyword by name, so an inherited getter or a non-enumerable one
 * too, where `for…in` sees neither (a `dependentRequired` under a class's `allOf` getter went unseen: the draft-07
 * Ajv read the schema and ignored it). Own and inherited names up to Object.prototype, enumerable or not.
 */
function namesOf(record: object): string[] {
  const names: string[] = [];
  for (
    let at: object | null = record;
    at !== null && at !== Object.prototype;
    at = Object.getPrototypeOf(at) as object | null
  )
    names.push(...Object.getOwnPropertyNames(at));
  return names;
}
