/**
 * Attack on the snapshot's shape copiers (src/gate/snapshot.ts `makeShape`, a336b34): any error out of
 * `new Function` is taken for "the runtime makes no function from text" (a CSP, a Worker) and switches the copiers
 * off for the life of the process. A call's own arguments make `new Function` throw otherwise: nested deep enough
 * (~2,800 levels; the caller finds the depth by trying), with a shape never met at the bottom, the copier is made
 * with the stack nearly spent and V8's parser throws a RangeError (stack overflow). The call itself goes through,
 * key by key; every later call of every tenant is copied key by key (issue 25's cost back, for good). A stack
 * overflow is no refusal of code generation: it should cost that one shape its copier, nothing more.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

function nested(depth: number, inner: Record<string, unknown>): Record<string, unknown> {
  let value = inner;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe('a deep call does not switch the shape copiers off for the process', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it(
    'after one call whose bottom shape overflowed the stack in new Function, new shapes still get copiers',
    { timeout: 180_000 },
    async () => {
      vi.resetModules();
      const { defineTool, ToolRegistry } = await import('../../src/index.js');
      const registry = new ToolRegistry();
      registry.register(defineTool({ name: 'echo', parameters: { type: 'object' }, execute: () => 'ok' }));
      let made = 0;
      const RealFunction = Function;
      vi.stubGlobal(
        'Function',
        new Proxy(RealFunction, {
          construct(target, args: unknown[]) {
            made++;
            return Reflect.construct(target, args) as object;
          },
        }),
      );
      const ok = async (args: Record<string, unknown>): Promise<boolean> =>
        (await registry.invoke('echo', args)).status === 'ok';
      expect(await ok({ a: 1 })).toBe(true);
      // From deeper than the gate reads (refused: the stack overflows in the snapshot), shallower one level at a
      // time, a shape never met at the bottom each time, until such a call goes through: the caller's search.
      let start = 3600;
      while (await ok(nested(start, { [`bottom${start}`]: 1 }))) start += 2000;
      let through = -1;
      for (let depth = start - 1; depth > 0; depth--)
        if (await ok(nested(depth, { [`bottom${depth}`]: 1 }))) {
          through = depth;
          break;
        }
      expect(through).toBeGreaterThan(0);
      // A shape never met before, at an ordinary depth: its copier is made (new Function is asked).
      const before = made;
      expect(await ok({ probe: 1, other: 'x' })).toBe(true);
      expect(made).toBeGreaterThan(before);
    },
  );
});
