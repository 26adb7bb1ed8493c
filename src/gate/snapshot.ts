/**
 * The snapshot of a call's arguments: read once, with JSON's own semantics (getters and Proxy traps run
 * once, `toJSON` — enumerable or not, own or inherited — is called once), into a deep-frozen plain copy.
 * Rules, handlers, listeners, the approval binding and the tool all see that one object, so nothing anyone
 * does after the decision (a listener, a handler, the caller mutating its input mid-batch, a getter that
 * answers differently the second time) changes what executes.
 *
 * Arguments that arrived as JSON text are the one exception to copying: `JSON.parse` made them, nobody
 * else holds them, and they hold nothing but plain data, so they are frozen where they are
 * (`freezeParsedArguments`) — the same guarantees at no copy; snapshot-text.ts reads a model's JSON text into
 * that same object (and gives a text its partition met again the object its first read made).
 *
 * On the sync path of every call (issue 12): leaves (strings, numbers, booleans) are copied inline,
 * without a call; the objects being read (for cycles) sit on one module-level stack rather than an array
 * per call; an array index becomes a string key only when a `toJSON` asks for it.
 */

/**
 * A deep-frozen plain copy of `value` as `JSON.stringify` would serialise it: `toJSON` applied, primitive
 * wrappers unwrapped, non-finite numbers as null, functions / symbols / undefined left out of objects and
 * null in arrays. Throws a TypeError for what JSON cannot carry (a cycle, a BigInt), for a `"__proto__"` key, and whatever a getter,
 * trap or `toJSON` throws; the gate turns either into a refusal.
 */
export function snapshotArguments(value: Record<string, unknown>): Readonly<Record<string, unknown>> {
  // A getter or toJSON may itself dispatch a call (and so snapshot its arguments): this read's part of
  // the stack starts at `base`, and is cut back to it whatever happens.
  const base = top;
  let copy: unknown;
  try {
    copy = read(value, '', base);
  } catch (error) {
    reading.length = top = base;
    throw error;
  }
  return argumentsRecord(copy);
}

/** The snapshot read, if it is an object (no array, not null): what the arguments of a call must read as. */
function argumentsRecord(copy: unknown): Readonly<Record<string, unknown>> {
  if (typeof copy !== 'object' || copy === null || Array.isArray(copy))
    throw new TypeError(
      `the arguments read as ${copy === null ? 'null' : Array.isArray(copy) ? 'an array' : typeof copy}, not an object`,
    );
  return copy as Readonly<Record<string, unknown>>;
}

/**
 * {@link snapshotArguments} of an object the caller found to be no array (`Array.isArray` false, nothing run since):
 * the same reads in the same order (`toJSON`, then the prototype, then the keys), read without `read`'s first steps.
 * Its prototype is asked right after `toJSON` is read, with nothing between that could move the object's map: the
 * JIT then knows it from that read, and a plain object's prototype costs no call into the runtime (in `read`,
 * `Array.isArray` came between; issue 25).
 */
export function snapshotRecord(value: Record<string, unknown>): Readonly<Record<string, unknown>> {
  const base = top;
  let copy: unknown;
  try {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    copy =
      typeof toJSON === 'function'
        ? readJSON((toJSON as (key: string) => unknown).call(value, ''), '', base)
        : Object.getPrototypeOf(value) === Object.prototype
          ? readRecord(value, '', base)
          : readOther(value, '', base);
  } catch (error) {
    reading.length = top = base;
    throw error;
  }
  return argumentsRecord(copy);
}

/**
 * Arguments `JSON.parse` just made from the call's JSON text (nobody else holds them), frozen in place,
 * deeply: the snapshot without the copy. JSON text cannot carry a getter, a Proxy, a function, a cycle,
 * a BigInt or a non-finite number; a `"__proto__"` key is refused as in {@link snapshotArguments}.
 */
export function freezeParsedArguments(value: Record<string, unknown>): Readonly<Record<string, unknown>> {
  freezeParsed(value, '');
  return value;
}

function freezeParsed(value: object, key: string): void {
  // JSON text can spell a number too large for a double (1e400): the snapshot's null, as JSON.stringify writes it.
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item === 'object' && item !== null) freezeParsed(item, String(i));
      else if (typeof item === 'number' && !Number.isFinite(item)) value[i] = null;
    }
  } else {
    const record = value as Record<string, unknown>;
    const names = Object.keys(record);
    for (let k = 0; k < names.length; k++) {
      const name = names[k]!;
      if (name === '__proto__') throw protoKey(key);
      const item = record[name];
      if (typeof item === 'object' && item !== null) freezeParsed(item, name);
      else if (typeof item === 'number' && !Number.isFinite(item)) record[name] = null;
    }
  }
  Object.freeze(value);
}

/** The objects being read, outermost first, from index 0 to `top` (a cycle is one of them met again). */
const reading: unknown[] = [];
let top = 0;

/** The JSON value of `value` (undefined: left out), frozen. Objects from `base` to `top` are being read (cycles). */
function read(value: unknown, key: string | number, base: number): unknown {
  if ((typeof value === 'object' && value !== null) || typeof value === 'bigint') {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function')
      value = (toJSON as (key: string) => unknown).call(value, typeof key === 'number' ? String(key) : key);
  }
  return readJSON(value, key, base);
}

/** {@link read} of a value whose `toJSON` was applied (or that has none). */
function readJSON(value: unknown, key: string | number, base: number): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'bigint':
      throw new TypeError('a BigInt cannot be carried in JSON arguments');
    case 'object':
      break;
    default:
      return undefined; // undefined, functions, symbols
  }
  if (value === null) return null;
  if (Array.isArray(value)) return readArray(value as unknown[], key, base);
  // A plain object (most arguments) is no primitive wrapper: only another prototype is asked whether it is one.
  if (Object.getPrototypeOf(value) !== Object.prototype) return readOther(value, key, base);
  return readRecord(value as Record<string, unknown>, key, base);
}

/** An object that is no array, of another prototype than Object.prototype (asked already): a wrapper's primitive, or a record. */
function readOther(value: object, key: string | number, base: number): unknown {
  // As JSON.stringify: ToNumber / ToString, always a primitive (an own valueOf answering an object is never
  // handed on: it would reach the tool unread and unfrozen); a Boolean's own value, or a TypeError.
  if (value instanceof Number) {
    const number = Number(value);
    return Number.isFinite(number) ? number : null;
  }
  if (value instanceof String) return String(value);
  if (value instanceof Boolean) return Boolean.prototype.valueOf.call(value);
  return readRecord(value as Record<string, unknown>, key, base);
}

/** Throws when `value` is one of the objects being read (from `base` to `top`): the arguments hold a cycle. */
function enter(value: object, base: number): void {
  for (let i = base; i < top; i++) if (reading[i] === value) throw new TypeError('the arguments contain a cycle');
}

// An object goes on the stack only when one of its items is read in turn (an object, or what is not a leaf): an
// object of leaves alone (most arguments) cannot be part of a cycle, and is copied without a push and a pop.

function readArray(array: unknown[], key: string | number, base: number): readonly unknown[] {
  enter(array, base);
  const length = array.length;
  const items: unknown[] = new Array<unknown>(length);
  const at = top;
  for (let i = 0; i < length; i++) {
    let item = array[i];
    // Leaves inline; anything else (objects, BigInt, undefined, functions, symbols) through read().
    if (typeof item === 'number') {
      if (!Number.isFinite(item)) item = null;
    } else if (typeof item !== 'string' && typeof item !== 'boolean') {
      if (top === at) reading[top++] = array;
      item = read(item, i, base);
      if (item === undefined) item = null;
    }
    items[i] = item;
  }
  if (top !== at) reading[--top] = undefined;
  return Object.freeze(items);
}

function readRecord(
  record: Record<string, unknown>,
  key: string | number,
  base: number,
): Readonly<Record<string, unknown>> {
  enter(record, base);
  const names = Object.keys(record);
  const count = names.length;
  let k = 0;
  let item: unknown;
  let object: Record<string, unknown>;
  // A record of a shape met before (its keys, in this order): read and copied by its shape's own code while its
  // values are leaves; the first that is not ends it, and the copy goes on below from there, that value in hand.
  const copy = copierOf(names);
  if (copy !== null) {
    const made = copy(record);
    if (made !== null) return Object.freeze(made);
    const values = stopped!;
    stopped = null;
    object = {};
    k = values.length - 1;
    for (let i = 0; i < k; i++) object[names[i]!] = values[i]; // a shape holds no "__proto__" key (makeShape)
    item = values[k];
  } else object = {};
  const at = top;
  for (let held = k < count && copy !== null; k < count; k++, held = false) {
    const name = names[k]!;
    if (!held) {
      // A key named "__proto__" (JSON.parse makes one from {"__proto__": …}) is refused before its value is
      // read: a tool or upstream that merges the arguments into an object would have that object's
      // prototype replaced (issue 11).
      if (name === '__proto__') throw protoKey(key);
      item = record[name];
    }
    if (typeof item === 'number') {
      if (!Number.isFinite(item)) item = null;
    } else if (typeof item !== 'string' && typeof item !== 'boolean') {
      if (top === at) reading[top++] = record;
      item = read(item, name, base);
      if (item === undefined) continue;
    }
    object[name] = item; // "__proto__" never gets here (refused above), so assigning is safe
  }
  if (top !== at) reading[--top] = undefined;
  return Object.freeze(object);
}

/**
 * A shape's copier: reads each of its keys once, in order, and answers the object literal of those values
 * (numbers that are not finite as null); null at the first value that is not a leaf, the values read so far
 * (that one last) left in {@link stopped}.
 */
type Copier = (record: Record<string, unknown>) => Record<string, unknown> | null;

/** What the last copier that stopped had read (taken at once by readRecord: no code runs in between). */
let stopped: unknown[] | null = null;
function stop(values: unknown[]): null {
  stopped = values;
  return null;
}

interface Shape {
  readonly names: readonly string[];
  readonly make: Copier;
}

/** Shapes of more keys than this are copied key by key. */
const SHAPE_KEYS = 16;
/**
 * At most this many copiers in the process, at most {@link SHAPES_PER_KEY} per first key, of keys of at most
 * {@link SHAPE_TEXT} units together: made once, never replaced.
 */
const SHAPES = 1024;
const SHAPES_PER_KEY = 4;
const shapes = new Map<string, Shape[]>();
let shapeCount = 0;
/** The shape met last (a server's calls to one tool come in runs): no look-up for it. */
let lastShape: Shape | null = null;
/** False once the runtime refused to make a function from text (a CSP, a Worker): every record copied key by key. */
let codegen = true;

/**
 * The copier of a record of leaves with these keys, in this order, or null (copied key by key). An object literal
 * gives every copy of one shape one map and stores its values without a look-up each (building the copy key by
 * key went through the megamorphic store every time: ~140 ns of an async `invoke`, issue 25). Made from the keys'
 * JSON text (a string literal for each, whatever it holds) the first time a shape is met, within the bounds above
 * (a caller sending a new shape each call cannot make a function each call).
 */
function copierOf(names: readonly string[]): Copier | null {
  const count = names.length;
  if (count === 0 || count > SHAPE_KEYS) return null;
  const last = lastShape;
  if (last !== null && sameNames(last.names, names)) return last.make;
  const first = names[0]!;
  let list = shapes.get(first);
  if (list !== undefined)
    for (let i = 0; i < list.length; i++) {
      const shape = list[i]!;
      if (sameNames(shape.names, names)) return (lastShape = shape).make;
    }
  if (!codegen || shapeCount >= SHAPES || (list !== undefined && list.length >= SHAPES_PER_KEY)) return null;
  const shape = makeShape(names);
  if (shape === null) return null;
  if (list === undefined) shapes.set(first, (list = []));
  list.push(shape);
  shapeCount++;
  return (lastShape = shape).make;
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The longest keys a shape is made for, all together (UTF-16 units): a copier's text stays small, kept for good. */
const SHAPE_TEXT = 512;

function makeShape(names: readonly string[]): Shape | null {
  // A quoted "__proto__" in a literal would set the prototype: never made (such a key is refused before).
  if (names.includes('__proto__')) return null;
  let length = 0;
  for (const name of names) length += name.length;
  if (length > SHAPE_TEXT) return null;
  // Made from the keys' JSON text only (each a string literal, whatever it holds); a named load per key.
  const reads = names.map((name, i) => {
    const v = `v${i}`;
    const held = names.slice(0, i + 1).map((_, j) => `v${j}`);
    return (
      `let ${v} = r[${JSON.stringify(name)}];\n` +
      `if (typeof ${v} === 'number') { if (!Number.isFinite(${v})) ${v} = null; }\n` +
      `else if (typeof ${v} !== 'string' && typeof ${v} !== 'boolean') return stop([${held.join(', ')}]);`
    );
  });
  const fields = names.map((name, i) => `${JSON.stringify(name)}: v${i}`);
  const body = `'use strict';\nreturn function copy(r) {\n${reads.join('\n')}\nreturn { ${fields.join(', ')} };\n};`;
  try {
    const make = new Function('stop', body) as (stopWith: typeof stop) => Copier;
    return { names: names.slice(), make: make(stop) };
  } catch (error) {
    // Only a runtime that makes no function from text (a CSP, --disallow-code-generation-from-strings) switches the
    // copiers off: it throws an EvalError. Anything else (V8's parser out of stack under arguments nested thousands
    // deep) leaves this one shape without a copier, never every later caller's.
    if (error instanceof EvalError) codegen = false;
    return null;
  }
}

function protoKey(key: string | number): TypeError {
  return new TypeError(
    `they hold a "__proto__" key (${key === '' ? 'at the top level' : `inside ${JSON.stringify(String(key))}`}), which would pollute a tool that merges its arguments; such arguments are refused`,
  );
}
