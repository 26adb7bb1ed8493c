/**
 * The snapshot of a call's arguments: read once, with JSON's own semantics (getters and Proxy traps run
 * once, `toJSON` — enumerable or not, own or inherited — is called once), into a deep-frozen plain copy.
 * Rules, handlers, listeners, the approval binding and the tool all see that one object, so nothing anyone
 * does after the decision (a listener, a handler, the caller mutating its input mid-batch, a getter that
 * answers differently the second time) changes what executes.
 */

/**
 * A deep-frozen plain copy of `value` as `JSON.stringify` would serialise it: `toJSON` applied, primitive
 * wrappers unwrapped, non-finite numbers as null, functions / symbols / undefined left out of objects and
 * null in arrays. Throws a TypeError for what JSON cannot carry (a cycle, a BigInt), and whatever a getter,
 * trap or `toJSON` throws; the gate turns either into a refusal.
 */
export function snapshotArguments(value: Record<string, unknown>): Readonly<Record<string, unknown>> {
  const copy = read(value, '', []);
  if (typeof copy !== 'object' || copy === null || Array.isArray(copy))
    throw new TypeError(
      `the arguments read as ${copy === null ? 'null' : Array.isArray(copy) ? 'an array' : typeof copy}, not an object`,
    );
  return copy as Readonly<Record<string, unknown>>;
}

/** The JSON value of `value` (undefined: left out), frozen. `stack` holds the objects being read (cycles). */
function read(value: unknown, key: string, stack: object[]): unknown {
  if ((typeof value === 'object' && value !== null) || typeof value === 'bigint') {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = (toJSON as (key: string) => unknown).call(value, key);
  }
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
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return value.valueOf();
  if (stack.includes(value)) throw new TypeError('the arguments contain a cycle');
  stack.push(value);
  let out: unknown[] | Record<string, unknown>;
  if (Array.isArray(value)) {
    const length = value.length;
    const items: unknown[] = new Array<unknown>(length);
    for (let i = 0; i < length; i++) {
      const item = read(value[i], String(i), stack);
      items[i] = item === undefined ? null : item;
    }
    out = items;
  } else {
    const record = value as Record<string, unknown>;
    const object: Record<string, unknown> = {};
    for (const name of Object.keys(record)) {
      const item = read(record[name], name, stack);
      if (item === undefined) continue;
      // A key named "__proto__" is data, as it is after JSON.parse: define it, never assign it.
      if (name === '__proto__')
        Object.defineProperty(object, name, { value: item, enumerable: true, writable: true, configurable: true });
      else object[name] = item;
    }
    out = object;
  }
  stack.pop();
  return Object.freeze(out);
}
