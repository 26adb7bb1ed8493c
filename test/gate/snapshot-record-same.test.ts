/**
 * snapshotRecord (src/gate/snapshot.ts), what precheck reads an `invoke`'s object arguments with once it found them
 * to be no array, against snapshotArguments (the general reader it stands for): on random objects — plain, of other
 * prototypes (none, a class's, a wrapper's, a Date), with toJSON (own, inherited, answering anything), getters,
 * Proxies logging every trap — the same copy (or the same refusal), deep-frozen, after the same reads and traps in
 * the same order (issue 25: it asks the prototype where the JIT knows the object's map).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { snapshotArguments, snapshotRecord } from '../../src/gate/snapshot.js';

type Reader = (value: Record<string, unknown>) => Readonly<Record<string, unknown>>;

function deepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(deepFrozen);
}

const leaf = fc.oneof(
  fc.integer(),
  fc.constantFrom(Infinity, NaN, -0, 1e300),
  fc.string({ maxLength: 3 }),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.constant('fn'),
  fc.constant('date'),
  fc.constant('wrapper'),
  fc.constant('toJSON'),
  fc.constant('nested'),
  fc.constant('bigint'),
);
const key = fc.constantFrom('a', 'b', '0', '7', 'x y', 'toJSON', '__proto__', 'ü');
/** What the top-level object is made of. */
const top = fc.constantFrom(
  'plain',
  'null-proto',
  'class',
  'number-wrapper',
  'string-wrapper',
  'date',
  'inherited-toJSON',
);
/** What a top-level own toJSON answers, when the keys hold one. */
const answer = fc.constantFrom('object', 'array', 'string', 'null', 'throws', 'wrapper');

/** A value of `kind`, its reads logged. */
function made(kind: unknown, log: string[]): unknown {
  switch (kind) {
    case 'fn':
      return () => 1;
    case 'date':
      return new Date(0);
    case 'wrapper':
      return Object(5) as unknown;
    case 'toJSON':
      return { toJSON: (k: string) => (log.push(`toJSON ${k}`), { k }) };
    case 'nested':
      return { inner: 1, more: [2, 'x', { deep: true }] };
    case 'bigint':
      return 10n;
    default:
      return kind;
  }
}

class Custom {}

function topObject(kind: string, log: string[]): Record<string, unknown> {
  switch (kind) {
    case 'null-proto':
      return Object.create(null) as Record<string, unknown>;
    case 'class':
      return new Custom() as Record<string, unknown>;
    case 'number-wrapper':
      return Object(7) as Record<string, unknown>;
    case 'string-wrapper':
      return Object('') as Record<string, unknown>; // no index of its own: any key can be defined
    case 'date':
      return new Date(0) as unknown as Record<string, unknown>;
    case 'inherited-toJSON':
      return Object.create({
        toJSON(this: unknown, k: string) {
          log.push(`inherited toJSON ${k}`);
          return { from: 'proto' };
        },
      }) as Record<string, unknown>;
    default:
      return {};
  }
}

/** An object of `shape`, its getters (and every trap, when proxied) logged. */
function build(
  shape: {
    readonly top: string;
    readonly keys: readonly string[];
    readonly kinds: readonly unknown[];
    readonly answer: string;
    readonly proxied: boolean;
  },
  log: string[],
): Record<string, unknown> {
  const target = topObject(shape.top, log);
  shape.keys.forEach((name, i) => {
    Object.defineProperty(target, name, {
      enumerable: true,
      configurable: true,
      get() {
        log.push(`get ${name}`);
        if (name !== 'toJSON') return made(shape.kinds[i], log);
        return (k: string) => {
          log.push(`own toJSON ${k}`);
          switch (shape.answer) {
            case 'array':
              return [1];
            case 'string':
              return 's';
            case 'null':
              return null;
            case 'throws':
              throw new Error('toJSON failed');
            case 'wrapper':
              return Object(true) as unknown;
            default:
              return { answered: made(shape.kinds[i], log) };
          }
        };
      },
    });
  });
  if (!shape.proxied) return target;
  return new Proxy(target, {
    get(t, p, r) {
      log.push(`trap get ${String(p)}`);
      return Reflect.get(t, p, r) as unknown;
    },
    getPrototypeOf(t) {
      log.push('trap getPrototypeOf');
      return Reflect.getPrototypeOf(t);
    },
    ownKeys(t) {
      log.push('trap ownKeys');
      return Reflect.ownKeys(t);
    },
    getOwnPropertyDescriptor(t, p) {
      log.push(`trap gOPD ${String(p)}`);
      return Reflect.getOwnPropertyDescriptor(t, p);
    },
  });
}

/** What `reader` makes of a fresh object of `shape`: its reads in order, then its copy's JSON or its refusal. */
function readBy(reader: Reader, shape: Parameters<typeof build>[0]): string[] {
  const log: string[] = [];
  const given = build(shape, log);
  try {
    const copy = reader(given);
    log.push(`frozen ${String(deepFrozen(copy))}`, `= ${JSON.stringify(copy)}`, `copy ${String(copy !== given)}`);
  } catch (error) {
    log.push(`threw ${error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error)}`);
  }
  return log;
}

describe('snapshotRecord reads an object as snapshotArguments does', () => {
  it('on random objects (plain, other prototypes, toJSON, getters, proxied): the same reads in order, the same copy or refusal', () => {
    fc.assert(
      fc.property(
        top,
        fc.uniqueArray(key, { maxLength: 6 }),
        fc.array(leaf, { minLength: 6, maxLength: 6 }),
        answer,
        fc.boolean(),
        (topKind, keys, kinds, answered, proxied) => {
          const shape = { top: topKind, keys, kinds, answer: answered, proxied };
          // Again and again: the shape's copier, once made, reads as the first read did.
          for (let round = 0; round < 3; round++)
            expect(readBy(snapshotRecord, shape)).toEqual(readBy(snapshotArguments, shape));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a getter or toJSON that dispatches (reads another snapshot) leaves the cycle stack as it found it', () => {
    const inner = { a: 1 };
    const outer = {
      get x() {
        return snapshotRecord(inner);
      },
      y: [1, 2],
    };
    const copy = snapshotRecord(outer);
    expect(copy).toEqual({ x: { a: 1 }, y: [1, 2] });
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic['self'] = cyclic;
    expect(() => snapshotRecord(cyclic)).toThrow(/cycle/);
    // After a refusal the next read starts clean: a shared object is no cycle.
    const shared = { s: 1 };
    expect(snapshotRecord({ p: shared, q: shared })).toEqual({ p: { s: 1 }, q: { s: 1 } });
  });
});
