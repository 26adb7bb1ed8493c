/**
 * What Ajv's compilation does with a schema's strings before it writes any code, bounded before it compiles: the JSON
 * Pointers `getSchemaRefs` keys each subschema by ({@link pointerWork}), the URIs it resolves `$id`s, `$ref`s and
 * `$anchor`s to, and object keys past the length V8 hashes strings by ({@link longKeyIn}). Called by
 * src/schema-cost.ts `refuseCostly`.
 */
import { HASHED_LENGTH_MAX } from './crypto.js';

/**
 * The most characters Ajv's compilation may compare between the JSON Pointers of a schema's subschemas that share a
 * length past {@link HASHED_LENGTH_MAX} (see {@link pointerWork}): 2^28, ~40–60 ms here (0.15–0.23 ns a character
 * compared, measured on shapes of 100 to 1,200 such pointers; 180 pointers of 16,400 characters compare ~2^28). No
 * schema of test/core/schema-cost-corpus.ts (vega, vega-lite, zod's) has a pointer that long.
 */
export const POINTER_COMPARED_MAX = 2 ** 28;
/**
 * The most characters of JSON Pointers Ajv's compilation may build (and hold at once, internalised) for a schema's
 * subschemas: 2^26 (~500K for the corpus' largest). A 2.4 MB schema of 2,000 names of distinct lengths under one of
 * 400,000 characters had Ajv build 800M characters (0.95 s, 920 MB resident).
 */
export const POINTER_CHARACTERS_MAX = 2 ** 26;

/**
 * The most characters a schema's `$id`, `$ref` and `$anchor` URIs may resolve to in all, each bounded by the `$id`s
 * around it (see {@link pointerWork}): 2^20. 1,000 `$ref`s under a 16,000-character `$id` (82 KB) took 4.5 s of Ajv's
 * compilation, fast-uri resolving each against the base (atk-longkeys).
 */
export const URI_CHARACTERS_MAX = 2 ** 20;

/** json-schema-traverse 1.0.0's keyword tables (read with `in`: Object.prototype's names are in each of them). */
const TRAVERSED = new Set([
  'additionalItems',
  'items',
  'contains',
  'additionalProperties',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
]);
const TRAVERSED_ARRAYS = new Set(['items', 'allOf', 'anyOf', 'oneOf']);
const TRAVERSED_PROPERTIES = new Set(['$defs', 'definitions', 'properties', 'patternProperties', 'dependencies']);
const SKIPPED = new Set([
  'default',
  'enum',
  'const',
  'required',
  'maximum',
  'minimum',
  'exclusiveMaximum',
  'exclusiveMinimum',
  'multipleOf',
  'maxLength',
  'minLength',
  'pattern',
  'format',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxProperties',
  'minProperties',
]);

/** `key in table` as json-schema-traverse reads its tables (plain objects: inherited names are in them too). */
function inTable(table: ReadonlySet<string>, key: string): boolean {
  return table.has(key) || key in Object.prototype;
}

/** What Ajv's compilation does with a schema's JSON Pointers: see {@link pointerWork}. */
export interface PointerWork {
  /** Characters of all the pointers (each built, flattened and internalised). */
  readonly characters: number;
  /** Pointers longer than HASHED_LENGTH_MAX that share their length with another. */
  readonly colliding: number;
  /** Characters compared at worst: Σ over each length past HASHED_LENGTH_MAX of (pointers of it choose 2) × length. */
  readonly compared: number;
  /**
   * The longest a URI Ajv keys may resolve to, at most: a nested `$id`, or a `$ref`/`$anchor`/… with the `$id`s
   * around it, their lengths added (the walk stops past HASHED_LENGTH_MAX).
   */
  readonly uri: number;
  /** The characters of those URIs past 1,024 characters, at most: each resolved by fast-uri character by character. */
  readonly uris: number;
}

/**
 * The JSON Pointers Ajv builds for a schema's subschemas before it compiles any code: `getSchemaRefs`
 * (ajv/dist/compile/resolve.js) walks the schema with json-schema-traverse (`allKeys: true`) and keys an object by
 * each subschema's pointer (`baseIds[jsonPtr]`), which internalises it: each pointer built, flattened and kept while
 * the walk lasts, and each one longer than {@link HASHED_LENGTH_MAX} compared with every pointer of its length before it
 * (they differ after the long key they share). A property name of 100,000 characters above 600 subschemas under
 * `not` (122 KB, little code) compared ~2.6 × 10^10 characters: 3.9 s. The pointers' lengths are counted here as
 * json-schema-traverse 1.0.0 builds them (a property name escaped, `~` → `~0` and `/` → `~1`; a keyword's own name
 * under `allKeys` not), without building one; the walk stops once past either bound (a schema whose objects are shared
 * or cyclic is refused, not walked without end).
 */
export function pointerWork(schema: object): PointerWork {
  let characters = 0;
  const lengths = new Map<number, number>();
  let compared = 0;
  let colliding = 0;
  const found: Uris = { longest: 0, all: 0 };
  const nodes: unknown[] = [schema];
  const pointers: number[] = [0];
  const bases: number[] = [0];
  // What the walk of subschemas passes by (data keywords, arrays it does not traverse), and the base around each: a
  // `$ref`'s JSON Pointer may pass through them, resolving each `$id` on its way (atk-round).
  const data: unknown[] = [];
  const dataBases: number[] = [];
  while (nodes.length > 0) {
    const node = nodes.pop();
    const length = pointers.pop()!;
    const base = bases.pop()!;
    if (!isRecord(node)) continue;
    const here = urisOf(node, base, node === schema, found);
    if (node !== schema || length > 0) {
      characters += length;
      if (length > HASHED_LENGTH_MAX) {
        const before = lengths.get(length) ?? 0;
        lengths.set(length, before + 1);
        compared += before * length;
        if (before > 0) colliding += before === 1 ? 2 : 1;
      }
      if (characters > POINTER_CHARACTERS_MAX || compared > POINTER_COMPARED_MAX) break;
    }
    if (found.longest > HASHED_LENGTH_MAX || found.all > URI_CHARACTERS_MAX) break;
    for (const key of Object.keys(node)) {
      const value = own(node, key);
      const at = length + 1 + key.length;
      if (Array.isArray(value)) {
        if (!inTable(TRAVERSED_ARRAYS, key)) {
          data.push(value);
          dataBases.push(here);
          continue;
        }
        for (let i = 0; i < value.length; i++) {
          nodes.push(own(value, String(i)));
          pointers.push(at + 1 + String(i).length);
          bases.push(here);
        }
      } else if (inTable(TRAVERSED_PROPERTIES, key)) {
        if (!isRecord(value)) continue;
        for (const name of Object.keys(value)) {
          nodes.push(own(value, name));
          pointers.push(at + 1 + escapedLength(name));
          bases.push(here);
        }
      } else if (inTable(TRAVERSED, key) || !inTable(SKIPPED, key)) {
        nodes.push(value);
        pointers.push(at);
        bases.push(here);
      } else {
        data.push(value);
        dataBases.push(here);
      }
    }
  }
  // The data: its URIs only (Ajv builds no pointer for it), each object once (shared or cyclic ones too).
  const seen = new Set<object>();
  while (data.length > 0 && found.longest <= HASHED_LENGTH_MAX && found.all <= URI_CHARACTERS_MAX) {
    const value = data.pop(); // an object or an array
    const base = dataBases.pop()!;
    if (typeof value !== 'object' || value === null || seen.has(value)) continue;
    seen.add(value);
    const here = urisOf(value, base, false, found);
    for (const key of Object.keys(value)) {
      const child = own(value, key);
      if (typeof child === 'object' && child !== null) {
        data.push(child);
        dataBases.push(here);
      }
    }
  }
  return { characters, colliding, compared, uri: found.longest, uris: found.all };
}

/** The URIs found so far: the longest one may resolve to, and the characters of those past URI_SHORT. */
interface Uris {
  longest: number;
  all: number;
}

/**
 * Notes in `found` the URIs of `node` (its `$id` unless the root's, its `$ref`, `$anchor`, …), each resolved against
 * a base of `base` characters; returns the base inside it. A URI resolved against its base is no longer than the base
 * and itself and a separator.
 */
function urisOf(node: object, base: number, root: boolean, found: Uris): number {
  const id = own(node, '$id');
  const here = typeof id === 'string' ? base + uriLength(id) + 1 : base;
  if (!root && typeof id === 'string') note(found, here);
  for (const keyword of URI_KEYWORDS) {
    const value = own(node, keyword);
    if (typeof value === 'string') note(found, here + uriLength(value) + 1);
  }
  return here;
}

function note(found: Uris, length: number): void {
  found.longest = Math.max(found.longest, length);
  if (length > URI_SHORT) found.all += length;
}

/**
 * A URI no longer than this is not counted in the bound of all of them (URI_CHARACTERS_MAX): 11,000 ordinary `$ref`s
 * under a 66-character root `$id` (594 KB) were refused as many references under a long one (atk-round).
 */
const URI_SHORT = 1_024;

/**
 * The most characters `text` may become in a URI fast-uri resolves: a character of RFC 3986's sets itself, any other
 * percent-encoded (an ASCII one in 3 characters, a UTF-16 unit past it in up to 9: three UTF-8 bytes).
 */
function uriLength(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code > 0x7f) length += 8;
    else if (!URI_CHARACTER.test(text[i]!)) length += 2;
  }
  return length;
}
const URI_CHARACTER = /[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]/;

/**
 * The keywords whose URI Ajv resolves against the `$id`s around it and keys its references by (`$id` apart):
 * `getSchemaRefs` keys anchors, the compilation each reference it resolves.
 */
const URI_KEYWORDS = ['$ref', '$anchor', '$dynamicAnchor', '$dynamicRef', '$recursiveRef'] as const;

/**
 * Does any object of `schema` (data under `default`, `enum` or `const` included) have a key past HASHED_LENGTH_MAX?
 * Each such key, kept alive by a check, slows every later internalisation of a key of its length: an upstream's
 * pages of tools of one long property name each (one pointer per schema) made each page slower than the last
 * (atk-longkeys: the 31st 3.8 MB page 14.5 s). Linear; each object read once (a cycle too).
 */
export function longKeyIn(schema: object): boolean {
  const seen = new Set<object>();
  const nodes: object[] = [schema];
  for (let at = nodes.pop(); at !== undefined; at = nodes.pop()) {
    if (seen.has(at)) continue;
    seen.add(at);
    for (const key of Object.keys(at)) {
      if (key.length > HASHED_LENGTH_MAX) return true;
      const value = own(at, key);
      if (typeof value === 'object' && value !== null) nodes.push(value);
    }
  }
  return false;
}

/** The length of `name` in a JSON Pointer (`~` → `~0`, `/` → `~1`). */
function escapedLength(name: string): number {
  let length = name.length;
  for (let at = name.indexOf('~'); at !== -1; at = name.indexOf('~', at + 1)) length++;
  for (let at = name.indexOf('/'); at !== -1; at = name.indexOf('/', at + 1)) length++;
  return length;
}

/** An own data property's value (Ajv reads the same), or undefined. */
export function own(record: object, key: string): unknown {
  const property = Object.getOwnPropertyDescriptor(record, key);
  return property !== undefined && 'value' in property ? property.value : undefined;
}

export function isRecord(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
