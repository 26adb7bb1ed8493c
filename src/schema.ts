/**
 * Argument schemas: a Standard Schema (zod, valibot, arktype…) or a plain JSON Schema object.
 *
 * The Standard Schema interfaces are copied here, as the spec asks implementers to do, so the core
 * needs no dependency to accept them. JSON Schema is validated with Ajv, compiled once per tool.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

/** The Standard Schema v1 interface (https://standardschema.dev), copied as the spec recommends. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
    /** Standard JSON Schema (optional): how the schema describes itself to a model. */
    readonly jsonSchema?:
      { readonly input: (options: { readonly target: string }) => Record<string, unknown> } | undefined;
  };
}
type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | {
      readonly issues: ReadonlyArray<{
        readonly message: string;
        readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
      }>;
    };

/** A JSON Schema object: draft-07, 2019-09 or 2020-12 (its `$schema`, or none: the keywords it uses tell). */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** What a tool's `parameters` may be. */
export type ToolParameters = StandardSchemaV1 | JsonSchema;

/** The outcome of validating arguments: the validated (possibly transformed) value, or the problems found. */
export type ValidationResult =
  | { readonly ok: true; readonly value: Record<string, unknown>; readonly issues?: never }
  | { readonly ok: false; readonly issues: readonly string[]; readonly value?: never };

/** A compiled validator; synchronous unless the Standard Schema itself is asynchronous. */
export type Validator = (value: Record<string, unknown>) => ValidationResult | Promise<ValidationResult>;

function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  const std = (value as { '~standard'?: { validate?: unknown } } | null)?.['~standard'];
  return typeof std === 'object' && std !== null && typeof std.validate === 'function';
}

const AJV_OPTIONS = { allErrors: true, strict: false, coerceTypes: false, useDefaults: false } as const;

/**
 * An Ajv with the formats of JSON Schema checked (ajv-formats, full mode). Without them `format` was ignored: a
 * tool whose schema says `format: "uuid"` or `"email"` (zod 4's `z.uuid()`, `z.email()`) ran with any string. A
 * format Ajv does not know (a UI hint: `"textarea"`) is still ignored, with Ajv's warning.
 */
function withFormats<A extends Ajv | Ajv2019 | Ajv2020>(ajv: A): A {
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
  return ajv;
}

const URL_START = /^(?:https?|ftp):\/\/\S+$/i;
// ajv-formats' `url` expression (dperini's), its user information `\S+(?::\S*)?@` written `\S+@` (the same strings:
// `:` is not whitespace): the two ways to split it at each `:` were the square. Linear once URL_START has held (no
// whitespace, so the path `[^\s]*` never backs off): each `@` is tried once, with the host that follows it.
const URL_HOST =
  /^(?:https?|ftp):\/\/(?:\S+@)?(?:(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}(?:\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4]))|(?:(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)(?:\.(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)*(?:\.(?:[a-z\u{00a1}-\u{ffff}]{2,})))(?::\d{2,5})?(?:\/[^\s]*)?$/iu;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
let ajv07: Ajv | undefined;
let ajv2019: Ajv2019 | undefined;
let ajv2020: Ajv2020 | undefined;
// Compiled validators by the schema's JSON text. Ajv caches by object identity, so ten thousand tools
// declared with equal schemas (a policy file's stub tools: `{ type: 'object' }` each) were ten thousand
// compilations — most of the time of loading such a file — and ten thousand entries Ajv keeps (issue 12).
// A validator is shared safely: it is called and its `errors` read synchronously, never across an await.
const compiled = new Map<string, ValidateFunction>();

function ajvCompile(schema: JsonSchema): ValidateFunction {
  let key: string | undefined;
  try {
    // Only a schema its JSON text describes exactly is shared by that text: Ajv reads the object itself, and
    // JSON.stringify writes ±Infinity and NaN as null, drops undefined and functions, calls toJSON and does
    // not see inherited or non-enumerable keywords (a schema of { minimum: Infinity } shared the check of
    // { minimum: -Infinity }: every number passed a schema that refuses them all).
    key = plainJson(schema, 0) ? JSON.stringify(schema) : undefined;
  } catch {
    key = undefined; // not JSON (a cycle, a BigInt): compiled on its own, as before
  }
  const hit = key === undefined ? undefined : compiled.get(key);
  if (hit) return hit;
  const ajv = ajvFor(schema);
  // One Ajv serves every registry of the process, and Ajv keeps each `$id` it compiles: one registry's schema
  // answered another's `$ref` (a tenant's lax `amount` for a tool that never defined it), and a second schema
  // with that `$id` could not be registered at all. Each schema's ids are forgotten once it is compiled: a
  // `$ref` resolves within its own schema (or to a meta-schema), never to another tool's.
  const known: Held = { refs: { ...ajv.refs }, schemas: { ...ajv.schemas } };
  try {
    const check = ajv.compile(schema);
    // Ajv calls a `$dynamicRef`'s (or `$recursiveRef`'s) target, the root, as a synchronous check even when it is
    // `$async`: its promise was read as valid, and a nested object the schema refuses passed. Not compiled.
    if ((check as { $async?: unknown }).$async === true && usesKeyword(schema, DYNAMIC_REFS, 0))
      throw new Error('$dynamicRef and $recursiveRef are not supported in a schema with $async: true');
    if (key !== undefined) compiled.set(key, check);
    return check;
  } finally {
    forget(ajv, schema, known);
  }
}

/** What an Ajv holds by id before a schema compiles: its meta-schemas (each schema's own ids are forgotten). */
type Held = { readonly refs: Ajv['refs']; readonly schemas: Ajv['schemas'] };

function forget(ajv: Ajv | Ajv2019 | Ajv2020, schema: JsonSchema, known: Held): void {
  try {
    ajv.removeSchema(schema);
  } catch {
    // not added (a schema that did not compile)
  }
  for (const id of Object.keys(ajv.refs)) if (!Object.hasOwn(known.refs, id)) ajv.removeSchema(id);
  for (const id of Object.keys(ajv.schemas)) if (!Object.hasOwn(known.schemas, id)) ajv.removeSchema(id);
  // removeSchema(schema) drops whatever the Ajv holds under the schema's `$id`: one whose `$id` is a meta-schema's
  // (it does not compile, "already exists") dropped the meta-schema, and no later schema of that dialect compiled in
  // any registry of the process. What was held before is put back.
  Object.assign(ajv.refs, known.refs);
  Object.assign(ajv.schemas, known.schemas);
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
function ajvFor(schema: JsonSchema): Ajv | Ajv2019 | Ajv2020 {
  const unread = NOT_READ.find((keyword) => usesKeyword(schema, [keyword], 0));
  if (unread !== undefined)
    throw new Error(`${unread} is not read by toolgate (Ajv's own keyword, in no JSON Schema dialect): never checked`);
  const dialect = dialectOf(schema);
  if (dialect === 'draft-07') return (ajv07 ??= draft07());
  const misread = dynamicMisread(schema);
  if (misread !== undefined) throw new Error(misread);
  // Ajv's `contains` marks every item evaluated once it is there (2020-12: the items it matched; 2019-09: none): a
  // tuple closed with `unevaluatedItems: false` beside one let any extra item through. Not compiled.
  if (usesKeyword(schema, ['unevaluatedItems'], 0) && usesKeyword(schema, ['contains'], 0))
    throw new Error(
      'unevaluatedItems beside contains is not supported: Ajv counts every item evaluated once contains is there (it would let unevaluated items through)',
    );
  if (dialect === '2019-09') return (ajv2019 ??= withFormats(new Ajv2019(AJV_OPTIONS)));
  // 2020-12 has no additionalItems (its Ajv ignores it): `prefixItems` closed with `additionalItems: false`, the
  // draft-07 / 2019-09 way, let every extra item through. Refused by name, as a later dialect's keyword is.
  if (usesKeyword(schema, ['additionalItems'], 0))
    throw new Error(
      `${schema['$schema'] === undefined ? 'a schema using a 2019-09 / 2020-12 keyword is read as 2020-12' : '$schema declares 2020-12'}, where additionalItems means nothing: close a prefixItems tuple with items: false (it would be ignored, never checked)`,
    );
  return (ajv2020 ??= withFormats(new Ajv2020(AJV_OPTIONS)));
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
    record !== schema && record['$schema'] !== undefined && !readsDialect(record['$schema']);
  if (someSchema(schema, nested, 0))
    throw new Error(
      'a subschema declares a $schema that is not a dialect toolgate reads (draft-07, 2019-09 or 2020-12), or the schema nests past 64 levels',
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

function readsDialect(declared: unknown): boolean {
  return typeof declared === 'string' && DIALECTS.has(declared.replace(/#$/, ''));
}

/** The dialect a `$schema` declares: draft-07, 2019-09 or 2020-12; any other value throws (never half read). */
export function declaredDialect(declared: unknown): Dialect {
  const dialect = typeof declared === 'string' ? DIALECTS.get(declared.replace(/#$/, '')) : undefined;
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
/** The dynamic scope's keywords: the references Ajv resolves at run time and the anchors they find. */
const DYNAMIC_KEYWORDS = [...DYNAMIC_REFS, '$dynamicAnchor', '$recursiveAnchor'];

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
    if (depth > 64) return 'a schema with $dynamicRef or $recursiveRef nested past 64 levels is not supported';
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
 * Does `schema` use one of `keywords` anywhere (read as Ajv reads it: inherited keys too)? Past 64 levels (or a
 * cycle) it is taken to: for the 2019-09 / 2020-12 keywords, the 2020-12 Ajv implements every keyword the draft-07
 * one does but tuple `items`, which it refuses to compile, never ignores (and `additionalItems`, which means
 * nothing without it); for the dynamic references, such a schema does not compile.
 */
function usesKeyword(schema: unknown, keywords: readonly string[], depth: number): boolean {
  return someSchema(schema, (record) => keywords.some((keyword) => record[keyword] !== undefined), depth);
}

/** Does `test` hold for `schema` or one of its subschemas (walked as `usesKeyword` walks; past 64 levels: taken to)? */
function someSchema(schema: unknown, test: (record: Record<string, unknown>) => boolean, depth: number): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  if (depth > 64) return true;
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

/**
 * Is `value` plain JSON data, read alike by JSON.stringify and by Ajv: strings, booleans, null, finite numbers,
 * arrays without holes and objects of Object.prototype (or none) whose string keys are all own enumerable data
 * properties, none named toJSON. Anything else (and nesting past 64 levels) is compiled on its own.
 */
function plainJson(value: unknown, depth: number): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || depth > 64) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  if (Array.isArray(value)) {
    if (proto !== Array.prototype) return false;
  } else if (proto !== Object.prototype && proto !== null) return false;
  const names = Object.getOwnPropertyNames(value);
  for (const name of names) {
    if (name === 'length' && Array.isArray(value)) continue;
    const own = Object.getOwnPropertyDescriptor(value, name)!;
    if (!own.enumerable || !('value' in own) || name === 'toJSON') return false;
    if (!plainJson(own.value, depth + 1)) return false;
  }
  // An array's holes are null in its text and undefined to Ajv.
  return !Array.isArray(value) || names.length === value.length + 1;
}

/** Compiles a validator for `parameters`; a JSON Schema that Ajv cannot compile throws (the caller names the tool). */
export function compileValidator(parameters: ToolParameters): Validator {
  if (isStandardSchema(parameters)) {
    const validate = parameters['~standard'].validate;
    return (value) => {
      const result = validate(value);
      return result instanceof Promise ? result.then(fromStandard) : fromStandard(result);
    };
  }
  const check = ajvCompile(parameters);
  let validator = validators.get(check);
  if (validator === undefined) {
    validator = (check as { $async?: unknown }).$async === true ? asyncValidator(check) : syncValidator(check);
    validators.set(check, validator);
  }
  return validator;
}

/**
 * What a compiled check is called with: nothing of its own, so every field takes the default Ajv writes into the
 * check's signature (`instancePath = ""`, `rootData = data`), as when called without one; Ajv only reads it. Called
 * without it, the check made an empty object per call for its parameter's default (56 bytes of an `invoke`, issue 25).
 */
const NO_CONTEXT = Object.freeze({}) as Parameters<ValidateFunction>[1];

function syncValidator(check: ValidateFunction): Validator {
  return (value) =>
    check(value, NO_CONTEXT) === true ? { ok: true, value } : { ok: false, issues: issuesOf(check.errors) };
}

/**
 * A schema with `$async: true` compiles to a check that returns a promise (of the data, or rejected with Ajv's
 * ValidationError): read as a truthy result it passed every call, invalid arguments included. It is awaited; any
 * other rejection rejects the validation, which refuses the call.
 */
function asyncValidator(check: ValidateFunction): Validator {
  return (value) =>
    (check(value, NO_CONTEXT) as unknown as Promise<unknown>).then(
      (): ValidationResult => ({ ok: true, value }),
      (error: unknown): ValidationResult => {
        if (error instanceof Ajv.ValidationError) return { ok: false, issues: issuesOf(error.errors as ErrorObject[]) };
        throw error;
      },
    );
}

function issuesOf(errors: readonly ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`);
}

// One validator per compiled check: tools with equal schemas (most of a large registry) share one function,
// so a call's validation reads no object of its own tool's and its call site stays monomorphic (issue 25).
const validators = new WeakMap<ValidateFunction, Validator>();

function fromStandard(result: StandardResult<unknown>): ValidationResult {
  if (result.issues) {
    return {
      ok: false,
      issues: result.issues.map((issue) => {
        const path = (issue.path ?? []).map((p) => String(typeof p === 'object' ? p.key : p)).join('.');
        return path ? `${path}: ${issue.message}` : issue.message;
      }),
    };
  }
  const value = result.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, issues: ['the schema produced a value that is not an object of arguments'] };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/** The JSON Schema a model is shown for `parameters`. */
export function jsonSchemaOf(parameters: ToolParameters): JsonSchema {
  if (!isStandardSchema(parameters)) return parameters;
  const convert = parameters['~standard'].jsonSchema;
  if (convert) {
    const schema = { ...convert.input({ target: 'draft-07' }) };
    delete schema['$schema'];
    return schema;
  }
  return { type: 'object' };
}
