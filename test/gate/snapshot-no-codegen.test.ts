/**
 * Where the runtime makes no function from text (a Content Security Policy, some Workers), the snapshot copies
 * every record key by key (snapshot.ts's shape copiers are never made): the same copies.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { snapshotArguments } from '../../src/gate/snapshot.js';

describe('the argument snapshot without code generation', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('copies records of every shape key by key, the same copies', () => {
    let tried = 0;
    vi.stubGlobal(
      'Function',
      new Proxy(Function, {
        construct() {
          tried++;
          throw new EvalError('Code generation from strings disallowed for this context');
        },
      }),
    );
    for (let round = 0; round < 3; round++) {
      const copy = snapshotArguments({ amount: 3, mode: 'read', limit: Infinity, nested: { n: [1, NaN] } });
      expect(copy).toEqual({ amount: 3, mode: 'read', limit: null, nested: { n: [1, null] } });
      expect(Object.isFrozen(copy)).toBe(true);
      expect(snapshotArguments({ only: 'leaves', n: 1 })).toEqual({ only: 'leaves', n: 1 });
    }
    // Tried once, then never again in this process.
    expect(tried).toBe(1);
  });
});
