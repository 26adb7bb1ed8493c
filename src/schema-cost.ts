/**
 * What a schema costs Ajv to compile, from the schema alone, before it compiles (src/schema.ts `refuseCostly`): the JSON
 * Pointers Ajv keys each subschema by ({@link pointerWork}), and a lower bound of the code it writes ({@link codeAtLeast}).
 *
 * A lower bound of the code Ajv writes for a schema, from the schema alone, before it compiles (src/schema.ts).
 *
 * src/schema-bounds.ts counts the code Ajv has written against SCHEMA_CODE_MAX, but only once Ajv has written a whole
 * function, and a schema without `$ref` is one function: 24,000 properties of `{type: "string", minLength: 1}`
 * (973 KB) had Ajv write 15 M characters (~4.5 s) before the refusal, and one property key of 10,000 characters above
 * 10,000 properties 400 M (~2 s, ~0.8 GB). A refused schema is not kept: each relisting paid it again.
 *
 * Under `allErrors` each place a keyword reports an error writes an error object whose `schemaPath` is the literal
 * JSON Pointer of the keyword from its function's root (`"#/properties/<key>/minLength"`, each key escaped, never
 * shorter), whose `instancePath` repeats the property keys on the way (`instancePath+"/<key>"`), and around it the
 * same statements every time (see {@link SITE}). Summed over the places surely written, the code is at least that.
 * Only what Ajv surely writes is counted, in a walk linear in the schema:
 * - a function for the root, and one for each local `$ref` target (`#/…`, resolved as Ajv resolves it; `inlineRefs:
 *   false` in src/schema-dialects.ts), each target once whatever its spellings (Ajv writes one per spelling); none
 *   for the root itself, a boolean, a target reached through or inside a nested `$id` (another base), or one that is
 *   only a `$ref` (Ajv compiles what it points to); none at all when an `$id` holds a fragment (a name Ajv may
 *   resolve a `#/…` reference to instead);
 * - in each, the keywords below (a subschema only under `properties`, `patternProperties`, `items`, `prefixItems`,
 *   `additionalProperties`, `dependencies`, `dependentSchemas`, `propertyNames`, `then` / `else` beside `if`, `allOf`,
 *   `oneOf`, `anyOf` whose every branch has a keyword counted here (Ajv skips an `anyOf` with an always-valid
 *   branch), and `not` and `if`, where Ajv writes empty error objects and no paths (nothing in a subschema there with
 *   a `not`: see {@link walkSchema}); `$defs` / `definitions` only as `$ref` targets. Any other keyword counts
 *   nothing: the bound undercounts, never overcounts (test/core/schema-cost.test.ts compares it with the code Ajv
 *   writes).
 */
import { HASHED_LENGTH_MAX } from './crypto.js';
import { SCHEMA_CODE_MAX } from './schema-bounds.js';

/**
 * The statements Ajv writes for each error it may report, without its paths, keyword and parameters (shortest names:
 * `err0`; `params:{}`; an empty message).
 */
const SITE =
  'const err0 = {instancePath,schemaPath:"#",keyword:"",params:{},message:""};if(vErrors === null){vErrors = [err0];}else {vErrors.push(err0);}errors++;'
    .length;
/** The statements of an error under `not` or `if` (Ajv makes empty objects there). */
const QUIET_SITE = 'const err0 = {};if(vErrors === null){vErrors = [err0];}else {vErrors.push(err0);}errors++;'.length;
/** The shortest function Ajv writes (its name, parameters and braces). */
const FUNCTION = 'function validate0(data, {instancePath="", parentData, parentDataProperty, rootData=data}={}){}'
  .length;
/** Keywords that report one error when their value is a number. */
const NUMBER_LIMITS = new Set([
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
]);
/** Keywords this bound counts (each a rule of every Ajv: a schema with one of them is not always valid). */
const COUNTED = new Set([
  ...NUMBER_LIMITS,
  'type',
  'pattern',
  'required',
  'enum',
  'const',
  'uniqueItems',
  'additionalProperties',
  'not',
  'anyOf',
  'oneOf',
  'allOf',
  'properties',
  'items',
  'prefixItems',
  'patternProperties',
  'dependencies',
  'dependentSchemas',
  'dependentRequired',
  'propertyNames',
  'if',
  '$ref',
]);
/** Ajv's `loopRequired` default: from this many names on, `required` is one loop reporting from one place. */
const LOOP_REQUIRED = 200;
/** Deeper than src/schema-dialects.ts lets a schema nest: not walked (counted as nothing). */
const DEPTH_MAX = 200;

interface Walk {
  readonly root: object;
  total: number;
  /** The `$ref` targets counted (or queued), each once. */
  readonly targets: Set<object>;
  readonly queue: object[];
}

/** Characters of code Ajv surely writes for `schema` (a lower bound: see above). */
export function codeAtLeast(schema: object): number {
  const walk: Walk = { root: schema, total: FUNCTION, targets: new Set(), queue: [] };
  const start = { path: 0, instance: 0, depth: 0, quiet: false };
  walkSchema(walk, schema, { ...start, scoped: fragmentIds(schema) });
  for (let next = walk.queue.pop(); next !== undefined; next = walk.queue.pop()) {
    if (own(next, '$ref') === undefined) walk.total += FUNCTION;
    walkSchema(walk, next, { ...start, scoped: false });
  }
  return walk.total;
}

/**
 * Throws, as src/schema-bounds.ts does past its bound, when `schema` surely compiles to more than SCHEMA_CODE_MAX, or
 * when the JSON Pointers Ajv keys its subschemas by would cost past {@link POINTER_COMPARED_MAX} or
 * {@link POINTER_CHARACTERS_MAX} (see {@link pointerWork}).
 */
export function refuseCostly(schema: object): void {
  const least = codeAtLeast(schema);
  if (least > SCHEMA_CODE_MAX)
    throw new Error(
      `the schema compiles to more than ${SCHEMA_CODE_MAX.toLocaleString('en-US')} characters of code (at least ${least.toLocaleString('en-US')} by its keywords' error paths alone): not compiled`,
    );
  const pointers = pointerWork(schema);
  if (pointers.compared > POINTER_COMPARED_MAX)
    throw new Error(
      `the schema's subschemas sit at JSON Pointers longer than ${HASHED_LENGTH_MAX.toLocaleString('en-US')} characters of equal lengths (at least ${pointers.colliding.toLocaleString('en-US')}, under a long property name), which Ajv's compilation compares with each other: more than ${POINTER_COMPARED_MAX.toLocaleString('en-US')} characters compared, not compiled`,
    );
  if (pointers.uri > HASHED_LENGTH_MAX)
    throw new Error(
      `the schema's $id, $ref or $anchor URIs may resolve past ${HASHED_LENGTH_MAX.toLocaleString('en-US')} characters (at least ${pointers.uri.toLocaleString('en-US')} with the $ids around them), which Ajv keys its references by and compares with each other when they share a length: not compiled`,
    );
  if (pointers.uris > URI_CHARACTERS_MAX)
    throw new Error(
      `the schema's $id, $ref and $anchor URIs may resolve to more than ${URI_CHARACTERS_MAX.toLocaleString('en-US')} characters in all (many references under a long $id), which Ajv's compilation resolves one by one: not compiled`,
    );
  if (pointers.characters > POINTER_CHARACTERS_MAX)
    throw new Error(
      `the schema's subschemas sit at JSON Pointers of more than ${POINTER_CHARACTERS_MAX.toLocaleString('en-US')} characters in all (a long property name above many subschemas), which Ajv's compilation builds and holds: not compiled`,
    );
  if (longKeyIn(schema))
    throw new Error(
      `the schema holds an object key of more than ${HASHED_LENGTH_MAX.toLocaleString('en-US')} characters, which V8 keeps in its table of strings while the check lives and compares with every later key of that length (it hashes them by their length alone): not compiled`,
    );
}

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
  /** The characters of all those URIs at most: each resolved by fast-uri, character by character (stops past the bound). */
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
  let uri = 0;
  let uris = 0;
  const nodes: unknown[] = [schema];
  const pointers: number[] = [0];
  const bases: number[] = [0];
  while (nodes.length > 0) {
    const node = nodes.pop();
    const length = pointers.pop()!;
    const base = bases.pop()!;
    if (!isRecord(node)) continue;
    const id = own(node, '$id');
    // A URI resolved against its base is no longer than the base and itself (and a separator).
    const here = typeof id === 'string' ? base + id.length + 1 : base;
    if (node !== schema && typeof id === 'string') {
      uri = Math.max(uri, here);
      uris += here;
    }
    for (const keyword of URI_KEYWORDS) {
      const value = own(node, keyword);
      if (typeof value !== 'string') continue;
      uri = Math.max(uri, here + value.length + 1);
      uris += here + value.length + 1;
    }
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
    if (uri > HASHED_LENGTH_MAX || uris > URI_CHARACTERS_MAX) break;
    for (const key of Object.keys(node)) {
      const value = own(node, key);
      const at = length + 1 + key.length;
      if (Array.isArray(value)) {
        if (!inTable(TRAVERSED_ARRAYS, key)) continue;
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
      }
    }
  }
  return { characters, colliding, compared, uri, uris };
}

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
function longKeyIn(schema: object): boolean {
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

/**
 * Does an `$id` of `schema` (the root's too) hold a fragment? Ajv keeps such an id as a name a `#/…` reference may
 * find before its JSON Pointer: no reference is followed then. Looked for everywhere, data included (linear).
 */
function fragmentIds(schema: object): boolean {
  const nodes: object[] = [schema];
  const depths: number[] = [0];
  while (nodes.length > 0) {
    const at = nodes.pop()!;
    const depth = depths.pop()!;
    if (depth > DEPTH_MAX) return true;
    const id = Array.isArray(at) ? undefined : own(at, '$id');
    if (typeof id === 'string' && id.includes('#')) return true;
    for (const key of Object.keys(at)) {
      const value = own(at, key);
      if (typeof value === 'object' && value !== null) {
        nodes.push(value);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** An own data property's value (Ajv reads the same), or undefined. */
function own(record: object, key: string): unknown {
  const property = Object.getOwnPropertyDescriptor(record, key);
  return property !== undefined && 'value' in property ? property.value : undefined;
}

function isRecord(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Does `value` hold a keyword this bound counts (then Ajv compiles it: not always valid)? */
function counted(value: unknown): boolean {
  return isRecord(value) && Object.keys(value).some((key) => COUNTED.has(key) && own(value, key) !== undefined);
}

/** Where a subschema is compiled: see {@link walkSchema}. */
interface Place {
  /** Characters of its error paths after `#`, from its function's root. */
  readonly path: number;
  /** Characters of the property keys its errors' `instancePath` repeats. */
  readonly instance: number;
  readonly depth: number;
  /** Under a nested `$id`, where `#/…` means another base: no reference followed. */
  readonly scoped: boolean;
  /** Under `not` or `if` (Ajv's `createErrors: false, allErrors: false`): each error an empty object. */
  readonly quiet: boolean;
}

/** Counts the error places of `schema`, compiled at `place`. */
function walkSchema(walk: Walk, schema: unknown, place: Place): void {
  if (!isRecord(schema) || place.depth > DEPTH_MAX) return;
  // Without allErrors an always-valid `not` fails unconditionally, and Ajv drops the code after it: none counted.
  if (place.quiet && ['not', 'contains', 'minContains', 'maxContains'].some((k) => own(schema, k) !== undefined))
    return;
  const { path, instance, quiet } = place;
  const scoped = place.scoped || (schema !== walk.root && own(schema, '$id') !== undefined);
  const site = (keyword: string, times = 1): void => {
    walk.total += times * (quiet ? QUIET_SITE : SITE + path + 1 + 2 * keyword.length + instance);
  };
  const sub = (keyword: string, value: unknown, key?: string | number, dataKey?: string, hushed = quiet): void => {
    walkSchema(walk, value, {
      path: path + 1 + keyword.length + (key === undefined ? 0 : 1 + String(key).length),
      instance: dataKey === undefined ? instance : instance + 1 + dataKey.length,
      depth: place.depth + 1,
      scoped,
      quiet: hushed,
    });
  };
  for (const keyword of Object.keys(schema)) {
    const value = own(schema, keyword);
    if (value === undefined) continue;
    if (NUMBER_LIMITS.has(keyword)) {
      if (typeof value === 'number') site(keyword);
      continue;
    }
    switch (keyword) {
      case 'type':
        if (typeof value === 'string' || (Array.isArray(value) && value.length > 0)) site(keyword);
        break;
      case 'pattern':
        if (typeof value === 'string') site(keyword);
        break;
      case 'required':
        // Under allErrors one place a name (a loop from LOOP_REQUIRED names on); without, one.
        if (Array.isArray(value) && value.length > 0)
          site(keyword, value.length < LOOP_REQUIRED && !quiet ? value.length : 1);
        break;
      case 'enum':
        if (Array.isArray(value) && value.length > 0) site(keyword);
        break;
      case 'const':
        site(keyword);
        break;
      case 'uniqueItems':
        if (value === true) site(keyword);
        break;
      case 'not':
        if (typeof value === 'boolean' || isRecord(value)) site(keyword);
        sub(keyword, value, undefined, undefined, true);
        break;
      case 'additionalProperties':
        if (value === false) site(keyword);
        else sub(keyword, value);
        break;
      case 'items':
      case 'prefixItems':
        // A tuple (draft-07 `items` as an array, `prefixItems`): each item's schema at its index.
        if (Array.isArray(value)) for (let i = 0; i < value.length; i++) sub(keyword, own(value, String(i)), i);
        else sub(keyword, value);
        break;
      case 'properties':
        if (isRecord(value))
          for (const key of Object.keys(value)) if (key !== '__proto__') sub(keyword, own(value, key), key, key);
        break;
      case 'patternProperties':
      case 'dependencies':
      case 'dependentSchemas':
      case 'dependentRequired':
        // Each schema by its name (a pattern, a property present), on the same value or on each matching property. A
        // list of names a present property requires (`dependencies`, `dependentRequired`): under allErrors an error
        // place for each name, each writing the whole list (its params' `deps` and its message; ~700 names wrote 6M
        // characters, 30,000 ran the process out of memory); without, one place.
        if (isRecord(value))
          for (const key of Object.keys(value)) {
            if (key === '__proto__') continue;
            const entry = own(value, key);
            if (Array.isArray(entry)) {
              const names = entry.filter((name): name is string => typeof name === 'string');
              if (names.length === 0) continue;
              if (quiet) site(keyword);
              else {
                site(keyword, names.length);
                // The list as Ajv writes it (`deps: "p0, p1, …"`), in the params and again in the message.
                const list = names.reduce((sum, name) => sum + name.length, 0) + 2 * (names.length - 1);
                walk.total += names.length * 2 * list;
              }
            } else if (keyword !== 'dependentRequired') sub(keyword, entry, key);
          }
        break;
      case 'propertyNames':
        if (counted(value)) {
          site(keyword);
          sub(keyword, value);
        }
        break;
      case 'if': {
        // `then` and `else` apply (errors made) only beside `if`, and report the `if` when one fails.
        const clauses = ['then', 'else'].filter((clause) => counted(own(schema, clause)));
        if (clauses.length === 0) break;
        site(keyword);
        sub(keyword, value, undefined, undefined, true);
        for (const clause of clauses) sub(clause, own(schema, clause));
        break;
      }
      case 'allOf':
      case 'oneOf':
      case 'anyOf':
        if (!Array.isArray(value) || value.length === 0) break;
        if (keyword === 'anyOf' && !value.every((branch, i) => Object.hasOwn(value, i) && counted(branch))) break;
        if (keyword !== 'allOf') site(keyword);
        for (let i = 0; i < value.length; i++) sub(keyword, own(value, String(i)), i);
        break;
      case '$ref':
        if (!scoped && typeof value === 'string') target(walk, value);
        break;
    }
  }
}

/** Queues the local target of `ref` (a JSON Pointer fragment of the root's document), unless already counted. */
function target(walk: Walk, ref: string): void {
  // `#/` is the root to Ajv, and a `#` after the fragment's is dropped (`#/$defs/a#` is `#/$defs/a`): neither followed
  // (both counted as `$defs/""` and `a#`, schemas Ajv never compiled, refused what compiled).
  if (!ref.startsWith('#/') || ref === '#/' || ref.indexOf('#', 1) !== -1) return;
  let at: unknown = walk.root;
  for (const part of ref.slice(2).split('/')) {
    if (typeof at !== 'object' || at === null) return;
    let key: string;
    try {
      key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return;
    }
    at = own(at, key);
    // Ajv resolves what follows from that `$id`'s base: not followed.
    if (isRecord(at) && own(at, '$id') !== undefined) return;
  }
  if (!isRecord(at) || at === walk.root || walk.targets.has(at)) return;
  walk.targets.add(at);
  walk.queue.push(at);
}
