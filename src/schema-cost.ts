/**
 * What a schema costs Ajv to compile, from the schema alone, before it compiles (src/schema.ts calls
 * {@link refuseCostly}): a lower bound of the code it writes ({@link codeAtLeast}), then what it does with the
 * schema's strings (src/schema-pointers.ts: its JSON Pointers, URIs and long keys).
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
import {
  isRecord,
  longKeyIn,
  own,
  pointerWork,
  POINTER_CHARACTERS_MAX,
  POINTER_COMPARED_MAX,
  URI_CHARACTERS_MAX,
} from './schema-pointers.js';

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
