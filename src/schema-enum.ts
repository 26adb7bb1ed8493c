/**
 * `enum` and `const` as Ajv decides them, worded as Ajv words them, found through a table of the members' structures
 * built once at compile time (src/schema-bounds.ts withBounds gives both to every Ajv). `const` is an `enum` of one:
 * Ajv compared it once per place it applies (a deep value against a deep `const` at every level: depth², 1,000 levels
 * 8 ms), and compared data as its `equal` does (below): the two decide alike.
 *
 * Ajv compared the value with each member by deep equality (from 200 members a loop of its `equal`, below a chain of
 * `data === m || equal(data, m)`): a schema of 20,000 object members and a value of 100,000 items each checked
 * against it made 2·10^9 comparisons (51–63 s CPU a check), and a deep member applied at every level of a deep value
 * walked each level's subtree again (depth²). Here a scalar is looked up in a Set, and an array or an object that is
 * plain data (see {@link uniqueItems} in src/schema-bounds.ts: what JSON text makes) by the id of its structure in
 * the keyword's table: the members and each of their parts interned at compile time, each by its children's ids
 * (object keys sorted). The value is only looked up, never interned: a part found in no member ends the walk (the
 * value is no member), and so does a value of more parts than the largest member (made of members' parts, 200 arrays
 * of 200 zeros against a member of 400 parts read 40,000 at each keyword; Ajv's `equal`, from the last item, one):
 * each place the keyword applies reads at most the largest member's parts, and the ids found are kept for the check
 * (src/schema-check.ts: each part read once per keyword, however often the schema applies it). A few scalar members
 * (below `loopEnum`, strings of at most {@link INLINE_TEXT_MAX} characters in all) are Ajv's own `===` chain: a
 * value costs at most the members' text at each place, as Ajv's did.
 *
 * Equal as JSON Schema and Ajv's `equal` have it: keys in any order, 1 and 1.0 one number, -0 equal to 0, Infinity
 * (an upstream's `1e400`) equal to itself, NaN equal to NaN inside a member and, as a member itself, only from 200
 * members (Ajv's `===` below them). Where Ajv's `equal` did not compare data: an own `constructor` key holding an
 * object was compared by identity (a member `{"constructor": {…}}` refused itself), an own `valueOf` or `toString`
 * key was called (the check threw): here they are data. A value that is not plain data (a getter, a class instance,
 * no prototype, an array with holes) is compared by Ajv's `equal` with each member, unless a plain part of it was
 * found in no member first (no member: Ajv's `equal` said so too, or threw on a part that is not plain data). A
 * schema whose members are not all plain data (a Date in a schema written in code), or an `enum` of `$data` (off in
 * src/schema-dialects.ts), is Ajv's own code.
 */
import { _, Name, type CodeKeywordDefinition, type KeywordCxt } from 'ajv';
import ajvEqual from 'ajv/dist/runtime/equal.js';
import ajvConst from 'ajv/dist/vocabularies/validation/const.js';
import ajvEnum from 'ajv/dist/vocabularies/validation/enum.js';
import { safeKey } from './crypto.js';
import { stateOf, type Measure } from './schema-check.js';

// CommonJS: Node's default import is its module.exports, which carries the module's value as `default` (a
// bundler's or vitest's default import is the value itself).
type Equal = (a: unknown, b: unknown) => boolean;
function own<T>(imported: unknown, is: (value: unknown) => boolean): T {
  return (is(imported) ? imported : (imported as { readonly default: unknown }).default) as T;
}
const isDefinition = (keyword: string) => (value: unknown) => (value as { keyword?: unknown }).keyword === keyword;

/** Ajv's `equal` (fast-deep-equal). */
export const equal = own<Equal>(ajvEqual, (value) => typeof value === 'function');
const AJV_ENUM = own<CodeKeywordDefinition>(ajvEnum, isDefinition('enum'));
const AJV_CONST = own<CodeKeywordDefinition>(ajvConst, isDefinition('const'));

const ROOT = new Name('rootData');

/** The members of one `enum` (or the value of one `const`), as looked up. */
interface Members {
  /** The scalar members (NaN only where Ajv's loop compares it: from 200 members). */
  /** The scalar members, a string by its {@link scalarKey}. */
  readonly scalars: Set<unknown>;
  /** Every member structure and each of its parts by its text (children by their ids), interned. */
  readonly table: Map<string, number>;
  /** The ids of the members that are arrays or objects. */
  readonly tops: Set<number>;
  /** The members that are arrays or objects, for a value that is not plain data (compared by Ajv's `equal`). */
  readonly objects: readonly object[];
  /** The parts of each structure in the table (itself included), by id. */
  readonly sizes: number[];
  /** The levels of each structure in the table (a scalar none, an array or object one more than its deepest part). */
  readonly depths: number[];
  /** The most parts of a member, and its most levels: a value of more is none. */
  size: number;
  depth: number;
  /** The longest string or key in a member: a value's longer one is in none (not written out, nor hashed). */
  longest: number;
}

/** The value of a part found in no member (plain data so far). */
const NONE = -1;
/** The value of a part that is not plain data. */
const OTHER = -2;
/** The value of a part of more parts than it may have where it is (see {@link idIn}). */
const LARGER = -3;

/**
 * The most characters of strings a list of scalar members below Ajv's `loopEnum` (or a `const` string) may have to be
 * decided by Ajv's own code, `data === m1 || …`, as Ajv wrote it: no call, no table (a call and a Set look-up cost ~6
 * ns of a ~10 ns check, issue 25). Each place the keyword applies then compares the value with each member: a number,
 * a boolean or null at once, a string only when of the same length, character by character (V8), so at most these
 * many characters a place, however long the value's string; and the code Ajv writes holds each member once.
 */
export const INLINE_TEXT_MAX = 64;
/**
 * The most members decided by Ajv's own `===` chain: each place the keyword applies compares the value with each, and
 * a `$ref` chain applied one leaf up to 2^20 times within a check's bound of calls (atk-round: 199 strings inlined,
 * 755 ms a 25-byte check against 29 ms by the table's one look-up a place).
 */
export const INLINE_MEMBERS_MAX = 8;

/**
 * Are `list`'s members all scalars (strings of at most {@link INLINE_TEXT_MAX} characters in all), at most
 * {@link INLINE_MEMBERS_MAX} of them and fewer than `loop`?
 */
function inlined(list: readonly unknown[], loop: number): boolean {
  if (list.length >= loop || list.length > INLINE_MEMBERS_MAX) return false;
  let text = 0;
  for (const member of list) {
    if (typeof member === 'string') text += member.length;
    else if (typeof member !== 'number' && typeof member !== 'boolean' && member !== null) return false;
  }
  return text <= INLINE_TEXT_MAX;
}

/**
 * `enum`: Ajv's keyword, its schema's members looked up (see the module's comment); a few scalar members
 * ({@link inlined}) compared by Ajv's own code (its `===`: -0 is 0, a NaN member matches nothing, as in the table).
 */
export const enumKeyword: CodeKeywordDefinition = {
  ...AJV_ENUM,
  code(cxt: KeywordCxt) {
    const schema: unknown = cxt.schema;
    const loop = cxt.it.opts.loopEnum;
    const members =
      !cxt.$data && Array.isArray(schema) && schema.length > 0 && !inlined(schema, loop)
        ? tableOf(enumTables, schema, () => membersOf(schema, schema.length >= loop))
        : undefined;
    if (members === undefined) AJV_ENUM.code(cxt);
    else lookUp(cxt, members);
  },
};

/**
 * `const`: Ajv's keyword, its value looked up as an `enum` of one (whose NaN Ajv's `!==` never matched); a scalar
 * ({@link inlined}) compared by Ajv's own code.
 */
export const constKeyword: CodeKeywordDefinition = {
  ...AJV_CONST,
  code(cxt: KeywordCxt) {
    const schema: unknown = cxt.schema;
    const members =
      cxt.$data || inlined([schema], 2)
        ? undefined
        : typeof schema === 'object' && schema !== null
          ? tableOf(constTables, schema, () => membersOf([schema], false))
          : membersOf([schema], false);
    if (members === undefined) AJV_CONST.code(cxt);
    else lookUp(cxt, members);
  },
};

/**
 * The tables built in the compilation running now, by the schema's `enum` list (or `const` value) itself: Ajv writes
 * a `$ref` target's code once for each spelling of its URI, and each wrote its own table (64 spellings of a target of
 * 80,000 members: 1.46 GB while the schema compiled; 4,096 ran the process out of its heap). Ajv's loop from
 * `loopEnum` members on is the same in every Ajv here (its default), so the list decides the table. Dropped when a
 * compilation starts ({@link newCompile}): a list changed in place since (an allowlist's entry revoked) is read anew.
 */
let enumTables = new WeakMap<object, Members | null>();
let constTables = new WeakMap<object, Members | null>();

/** Starts a compilation (src/schema.ts): no table kept from an earlier one. */
export function newCompile(): void {
  enumTables = new WeakMap();
  constTables = new WeakMap();
}

function tableOf(tables: WeakMap<object, Members | null>, key: object, build: () => Members | undefined) {
  let members = tables.get(key);
  if (members === undefined) tables.set(key, (members = build() ?? null));
  return members ?? undefined;
}

/** The check's code: the value (with the check's root, which keys the ids kept) looked up in `members`. */
function lookUp(cxt: KeywordCxt, members: Members): void {
  const has = cxt.gen.scopeValue('func', { ref: (data: unknown, root: unknown) => isMember(members, data, root) });
  cxt.pass(_`${has}(${cxt.data}, ${ROOT})`);
}

/** `list` as looked up, or undefined: a member that is not plain data (Ajv's own code compares them). */
function membersOf(list: readonly unknown[], nan: boolean): Members | undefined {
  const members: Members = {
    scalars: new Set(),
    table: new Map(),
    tops: new Set(),
    objects: [],
    sizes: [],
    depths: [],
    size: 0,
    depth: 0,
    longest: 0,
  };
  const seen = new WeakMap<object, number>();
  for (const member of list) {
    if (typeof member === 'number' || typeof member === 'string' || typeof member === 'boolean' || member === null) {
      if (nan || !Number.isNaN(member)) members.scalars.add(scalarKey(member));
      continue;
    }
    if (typeof member !== 'object') return undefined;
    const id = idIn(member, members, Infinity, Infinity, seen);
    if (id < 0) return undefined;
    members.tops.add(id);
    members.size = Math.max(members.size, members.sizes[id]!);
    members.depth = Math.max(members.depth, members.depths[id]!);
    (members.objects as object[]).push(member);
  }
  return members;
}

/** An array or object whose measure is being taken (met again: a cycle, not plain data). */
const MEASURING: Measure = { size: Infinity, depth: Infinity };

/**
 * A scalar as the table of scalars holds it: a string by its safeKey (one past 16,383 characters by its digest: V8
 * hashes it by its length alone, and a lookup compared it with every member of that length), anything else itself.
 */
function scalarKey(value: unknown): unknown {
  return typeof value === 'string' ? safeKey(value) : value;
}

/** Is `data` one of `members`, as Ajv's `enum` decides. */
function isMember(members: Members, data: unknown, root: unknown): boolean {
  if (typeof data !== 'object' || data === null) return members.scalars.has(scalarKey(data));
  if (members.objects.length === 0) return false;
  const measure = measureOf(data, measuresFor(root));
  if (measure !== null && (measure.size > members.size || measure.depth > members.depth)) return false;
  const id = idIn(data, members, members.size, members.depth, keptFor(root, members));
  if (id === OTHER) return members.objects.some((member) => equal(data, member));
  return members.tops.has(id);
}

/**
 * The measures of the arrays and objects of `root`'s value, kept for its check (src/schema-check.ts), for every table:
 * a value deeper (or larger) than every member is none, said without walking it. Walked down to the members' depth at
 * each level where a recursive schema applies the keyword, a value deeper than the members cost (L − D)·D reads
 * (174 KB of arguments: 6.5 s).
 */
function measuresFor(root: unknown): WeakMap<object, Measure | null> {
  const state = stateOf(root);
  return (state.measures ??= new WeakMap());
}

/**
 * The children of an array or object that is plain data, or undefined (a prototype but Array's or Object's, holes or
 * keys of an array's own, a getter, a function: compared by Ajv's `equal`). An array's index keys come first, in
 * order: a hole leaves fewer, and an own key beside it filled the count (`[1, <hole>]` with `x: 2` was `[1, 2]`).
 */
export function childrenOf(
  value: object,
): { readonly keys: readonly string[]; readonly values: unknown[] } | undefined {
  const array = Array.isArray(value);
  if (Object.getPrototypeOf(value) !== (array ? Array.prototype : Object.prototype)) return undefined;
  const keys = Object.keys(value);
  if (array && (keys.length !== value.length || (keys.length > 0 && keys[keys.length - 1] !== String(keys.length - 1))))
    return undefined;
  const values: unknown[] = [];
  for (const key of keys) {
    const property = Object.getOwnPropertyDescriptor(value, key);
    if (property === undefined || !('value' in property) || typeof property.value === 'function') return undefined;
    values.push(property.value);
  }
  return { keys, values };
}

/**
 * The measure of `value` when it is plain data, else null; each array and object measured once for the check (kept in
 * `kept`), in a loop (a value 20,000 levels deep is no deeper for the stack).
 */
function measureOf(value: object, kept: WeakMap<object, Measure | null>): Measure | null {
  interface Open {
    readonly node: object;
    readonly values: readonly unknown[];
    at: number;
    size: number;
    depth: number;
  }
  const open = (node: object): Open | null => {
    const children = childrenOf(node);
    if (children === undefined) return null;
    kept.set(node, MEASURING);
    return { node, values: children.values, at: 0, size: 1, depth: 1 };
  };
  const before = kept.get(value);
  if (before !== undefined) return before === MEASURING ? null : before;
  const first = open(value);
  const stack: Open[] = first === null ? [] : [first];
  let answer: Measure | null = null;
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.at < top.values.length) {
      const child = top.values[top.at++];
      if (typeof child !== 'object' || child === null) {
        top.size += 1;
        continue;
      }
      const known = kept.get(child);
      if (known === undefined) {
        const next = open(child);
        if (next !== null) {
          stack.push(next);
          continue;
        }
      }
      if (known === undefined || known === null || known === MEASURING) {
        // Not plain data (or a cycle): nor is any array or object holding it.
        for (const held of stack) kept.set(held.node, null);
        if (known === undefined) kept.set(child, null);
        return null;
      }
      top.size += known.size;
      top.depth = Math.max(top.depth, known.depth + 1);
      continue;
    }
    stack.pop();
    answer = { size: top.size, depth: top.depth };
    kept.set(top.node, answer);
    const parent = stack[stack.length - 1];
    if (parent !== undefined) {
      parent.size += answer.size;
      parent.depth = Math.max(parent.depth, answer.depth + 1);
    }
  }
  if (first === null) kept.set(value, null);
  return first === null ? null : answer;
}

/**
 * The ids of the parts of `root`'s value found in `members`' table, kept for its check (src/schema-check.ts): a
 * recursive schema applies its keyword at every level.
 */
function keptFor(root: unknown, members: Members): WeakMap<object, number> {
  const tables = (stateOf(root).lookups ??= new WeakMap());
  let kept = tables.get(members);
  if (kept === undefined) tables.set(members, (kept = new WeakMap()));
  return kept;
}

/**
 * The id of `value` in `members`' table: interned at compile time (the members: `most` Infinity), else looked up in
 * at most `most` parts and `deep` levels ({@link NONE} when found in no member, {@link LARGER} past either: a value
 * of more parts or levels than every member is none, and its walk stops there — a value 20,000 levels deep went as
 * deep as the stack), {@link OTHER} when it is not plain data. Each answer is kept but LARGER below the whole budget
 * (the same part may be found where more is left).
 */
function idIn(value: unknown, members: Members, most: number, deep: number, kept: WeakMap<object, number>): number {
  const add = most === Infinity;
  // -0 is "0"; NaN and Infinity their own words, each equal only to itself as Ajv's `equal` has them.
  if (typeof value === 'number') return textId(String(value), members, add, 1, 0);
  if (typeof value === 'string') {
    if (add) members.longest = Math.max(members.longest, value.length);
    else if (value.length > members.longest) return NONE;
    return textId(JSON.stringify(value), members, add, 1, 0);
  }
  if (value === null || typeof value === 'boolean') return textId(JSON.stringify(value), members, add, 1, 0);
  if (typeof value !== 'object') return OTHER;
  let id = kept.get(value);
  if (id !== undefined) return id >= 0 && (members.sizes[id]! > most || members.depths[id]! > deep) ? LARGER : id;
  id = structureId(value, members, most, deep, kept);
  if (id !== LARGER) kept.set(value, id);
  else if (most >= members.size && deep >= members.depth) kept.set(value, NONE);
  return id;
}

/** The id of an array's or object's structure in `members`' table (see {@link idIn}). */
function structureId(
  value: object,
  members: Members,
  most: number,
  deep: number,
  kept: WeakMap<object, number>,
): number {
  const add = most === Infinity;
  const array = Array.isArray(value);
  if (Object.getPrototypeOf(value) !== (array ? Array.prototype : Object.prototype)) return OTHER;
  if (deep < 1) return LARGER;
  if (array && value.length >= most) return LARGER; // its items not even listed
  if (!array && Object.keys(value).length >= most) return LARGER;
  // This level's keys all data properties (no getter, no function) before any child is read.
  const read = childrenOf(value);
  if (read === undefined) return OTHER;
  const { keys, values: children } = read;
  if (!array)
    for (const key of keys)
      if (add) members.longest = Math.max(members.longest, key.length);
      else if (key.length > members.longest) return NONE;
  const ids: number[] = [];
  let size = 1;
  let depth = 1;
  for (const child of children) {
    const id = idIn(child, members, most - size, deep - 1, kept);
    if (id < 0) return id;
    ids.push(id);
    size += members.sizes[id]!;
    depth = Math.max(depth, members.depths[id]! + 1);
    if (size > most) return LARGER;
  }
  let text: string;
  if (array) text = `[${ids.join(',')}`;
  else {
    const order = keys.map((_key, i) => i).sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : 0));
    text = `{${order.map((i) => `${JSON.stringify(keys[i])}:${ids[i]}`).join(',')}`;
  }
  return textId(text, members, add, size, depth);
}

/**
 * The id of a text (of `size` parts, `depth` levels) in `members`' table: interned (`add`), or looked up
 * ({@link NONE} when absent).
 */
function textId(text: string, members: Members, add: boolean, size: number, depth: number): number {
  const key = safeKey(text); // a text past 16,383 characters by its digest (src/crypto.ts)
  let id = members.table.get(key);
  if (id === undefined) {
    if (!add) return NONE;
    members.table.set(key, (id = members.table.size));
    members.sizes.push(size);
    members.depths.push(depth);
  }
  return id;
}
