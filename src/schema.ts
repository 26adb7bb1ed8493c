/**
 * Argument schemas: a Standard Schema (zod, valibot, arktype…) or a plain JSON Schema object.
 *
 * The Standard Schema interfaces are copied here, as the spec asks implementers to do, so the core
 * needs no dependency to accept them. JSON Schema is validated with Ajv, compiled once per tool.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { safeKey } from './crypto.js';
import { codeWritten, newAsyncCheck, newCheck, stoppedCheck } from './schema-bounds.js';
import { endAsyncCheck, endCheck } from './schema-check.js';
import { parseJsonText } from './json-text.js';
import { refuseCostly } from './schema-cost.js';
import { newCompile } from './schema-enum.js';
import { ajvFor, DYNAMIC_KEYWORDS, usesKeyword, type JsonSchema, type SchemaAjv } from './schema-dialects.js';

export { declaredDialect, type JsonSchema } from './schema-dialects.js';

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

// Compiled validators by the schema's JSON text. Ajv caches by object identity, so ten thousand tools
// declared with equal schemas (a policy file's stub tools: `{ type: 'object' }` each) were ten thousand
// compilations — most of the time of loading such a file — and ten thousand entries Ajv keeps (issue 12).
// A validator is shared safely: it is called and its `errors` read synchronously, never across an await.
// Bounded (an upstream relisting new schemas grew it without end, each kept by its whole text): the least recently
// used go first past COMPILED_MAX entries or COMPILED_SIZE_MAX characters of text and code (a 14 KB schema compiles to
// ~3.7M characters of code, ~3.7 MB kept: counted by its text alone, 16M characters kept ~4 GB); one past that alone
// is not kept. A tool keeps the validator it was given; an equal schema compiled after its entry went is compiled anew.
// Keyed by safeKey(text): a text past 16,383 characters by its digest (V8 hashes such a string by its length alone, and
// 3,900 schemas of 16,400 characters differing at their end each compared every other at each look-up).
const compiled = new Map<string, { readonly check: ValidateFunction; readonly size: number }>();
let compiledSize = 0;

/** How many compiled validators are kept by their schema's text, and how many characters of text and code keep them. */
export const COMPILED_MAX = 10_000;
export const COMPILED_SIZE_MAX = 64_000_000;

/** What the compiled validators kept hold now: their number and the characters of their text and code. */
export function compiledKept(): { readonly entries: number; readonly size: number } {
  return { entries: compiled.size, size: compiledSize };
}

/** The validator kept for `key` (a schema text's safeKey), now the most recently used; or undefined. */
function keptCheck(key: string): ValidateFunction | undefined {
  const hit = compiled.get(key);
  if (hit === undefined) return undefined;
  compiled.delete(key);
  compiled.set(key, hit);
  return hit.check;
}

/**
 * Keeps `check` for `key` (the safeKey of a schema's text of `length` characters; `code` characters of code written),
 * dropping the least recently used past the bounds.
 */
function keepCheck(key: string, length: number, check: ValidateFunction, code: number): void {
  const size = length + code;
  if (size > COMPILED_SIZE_MAX) return;
  compiled.set(key, { check, size });
  compiledSize += size;
  for (const [old, entry] of compiled) {
    if (compiled.size <= COMPILED_MAX && compiledSize <= COMPILED_SIZE_MAX) break;
    compiled.delete(old);
    compiledSize -= entry.size;
  }
}

function ajvCompile(given: JsonSchema): ValidateFunction {
  let text: string | undefined;
  try {
    // Only a schema its JSON text describes exactly is shared by that text: Ajv reads the object itself, and
    // JSON.stringify writes ±Infinity and NaN as null, drops undefined and functions, calls toJSON and does
    // not see inherited or non-enumerable keywords (a schema of { minimum: Infinity } shared the check of
    // { minimum: -Infinity }: every number passed a schema that refuses them all).
    text = plainJson(given, 0) ? JSON.stringify(given) : undefined;
  } catch {
    text = undefined; // not JSON (a cycle, a BigInt): compiled on its own, as before
  }
  const key = text === undefined ? undefined : safeKey(text);
  const hit = key === undefined ? undefined : keptCheck(key);
  if (hit) return hit;
  // A check kept by its text is compiled from that text, not from the caller's object: Ajv's code reads parts of the
  // schema again at every check (`required` from 200 names, `properties` beside `additionalProperties: false`), so a
  // caller's object changed after it compiled (or a Proxy answering one thing to JSON.stringify and another to Ajv)
  // changed the check every later tool of that text was given (a required name missing passed; a closed object took
  // an extra `command`).
  const schema = text === undefined ? given : (parseJsonText(text) as JsonSchema);
  const ajv = ajvFor(schema);
  // One Ajv serves every registry of the process, and Ajv keeps each `$id` it compiles: one registry's schema
  // answered another's `$ref` (a tenant's lax `amount` for a tool that never defined it), and a second schema
  // with that `$id` could not be registered at all. Each schema's ids are forgotten once it is compiled: a
  // `$ref` resolves within its own schema (or to a meta-schema), never to another tool's.
  const known: Held = { refs: { ...ajv.refs }, schemas: { ...ajv.schemas } };
  try {
    newCheck(schema); // the meta-schema's checks (its uniqueItems) run on the schema here: nothing kept from before
    newCompile(); // enum and const tables built anew (a list changed in place since the last compilation)
    // A schema that surely compiles past the bound of code is refused before Ajv writes any (src/schema-cost.ts).
    refuseCostly(schema);
    const check = ajv.compile(schema);
    // Ajv calls a `$dynamicRef`'s (or `$recursiveRef`'s) target, the root, as a synchronous check even when it is
    // `$async`: its promise was read as valid, and a nested object the schema refuses passed. Not compiled; nor is an
    // anchor, which the meta-schemas' own references find through a `$ref` to one (the promise, rejected, unhandled:
    // Node's process ended; atk-async-meta-dynamic-anchor).
    if ((check as { $async?: unknown }).$async === true && usesKeyword(schema, DYNAMIC_KEYWORDS, 0))
      throw new Error('$dynamicRef, $recursiveRef and their anchors are not supported in a schema with $async: true');
    if (key !== undefined && text !== undefined) keepCheck(key, text.length, check, codeWritten());
    return check;
  } finally {
    endCheck(); // nothing of the meta-schema's checks held
    forget(ajv, schema, known);
  }
}

/** What an Ajv holds by id before a schema compiles: its meta-schemas (each schema's own ids are forgotten). */
type Held = { readonly refs: Ajv['refs']; readonly schemas: Ajv['schemas'] };

function forget(ajv: SchemaAjv, schema: JsonSchema, known: Held): void {
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
  return (value) => {
    let valid: unknown;
    try {
      newCheck(value);
      valid = check(value, NO_CONTEXT);
    } catch (error) {
      endCheck();
      return stopped(error);
    }
    // Nothing of the value held once it is decided (src/schema-check.ts). Not in a `finally`: ~3 ns more a check.
    endCheck();
    return valid === true ? { ok: true, value } : { ok: false, issues: issuesOf(check.errors) };
  };
}

/** A check that stopped at its bound of errors (src/schema-bounds.ts): refused, its first errors and why; any other throw is rethrown. */
function stopped(error: unknown): ValidationResult {
  const stop = stoppedCheck(error);
  if (stop === undefined) throw error;
  return { ok: false, issues: [stop.why, ...issuesOf(stop.errors.slice(0, STOPPED_SHOWN))] };
}

/** How many of a stopped check's errors its issues show, after why it stopped (a Decision shows ten issues). */
const STOPPED_SHOWN = 9;

/**
 * A schema with `$async: true` compiles to a check that returns a promise (of the data, or rejected with Ajv's
 * ValidationError): read as a truthy result it passed every call, invalid arguments included. It is awaited; any
 * other rejection rejects the validation, which refuses the call.
 */
function asyncValidator(check: ValidateFunction): Validator {
  return (value) => {
    // Its own count of steps, and its state kept by its value, while it awaits and other checks run meanwhile
    // (src/schema-bounds.ts, src/schema-check.ts).
    const state = newAsyncCheck(value);
    return (check(value, NO_CONTEXT) as unknown as Promise<unknown>).then(
      (): ValidationResult => (endAsyncCheck(value, state), { ok: true, value }),
      (error: unknown): ValidationResult => {
        endAsyncCheck(value, state);
        if (error instanceof Ajv.ValidationError) return { ok: false, issues: issuesOf(error.errors as ErrorObject[]) };
        return stopped(error);
      },
    );
  };
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
