/**
 * Attack on invoke3's turn closer (src/deadlines.ts, OWN_NEXT_TICK): the `process.nextTick` found when the module
 * loads is taken for the process's own — one that always calls back — unless it carries a `clock`. A nextTick that
 * user code installed before toolgate loaded and that has no `clock` (a hand-rolled scheduler, jest's legacy fake
 * timers, which install before the test's modules load) is taken for it too. A call started under it gets that
 * replacement as its turn's closer; once the replacement is gone (its queue never flushed), every later add sees a
 * closer "of its own" and joins the open turn, which never closes: no timer is armed, and a tool that never settles
 * is never refused nor aborted (until 1,024 calls). On main, an add whose turn's closer is not `process.nextTick`
 * now opens a turn of its own, and the timeout fires.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

const realNextTick = process.nextTick;

afterEach(() => {
  process.nextTick = realNextTick;
  vi.resetModules();
});

describe('a nextTick replaced by user code before toolgate loaded', () => {
  it('a call started under it, the replacement then gone: a later hanging call is still refused after its timeout', async () => {
    vi.resetModules();
    // The user's own nextTick (no `clock`): while `holding`, callbacks are queued and run only when the user flushes
    // them (never, here), as a hand-rolled fake clock's; otherwise handed to the process's.
    const queued: (() => void)[] = [];
    let holding = false;
    process.nextTick = ((callback: (...args: unknown[]) => void, ...args: unknown[]) => {
      if (holding) queued.push(() => callback(...args));
      else realNextTick(callback, ...args);
    }) as typeof process.nextTick;
    const { defineTool, ToolRegistry } = await import('../../src/index.js');
    holding = true;
    let aborted = false;
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'hang',
        parameters: { type: 'object' },
        metadata: { timeoutMs: 50 },
        execute: (_args, { signal }) =>
          new Promise(() => {
            signal.addEventListener('abort', () => {
              aborted = true;
            });
          }),
      }),
    );
    void registry.invoke('hang', {}); // under the replacement: it is the turn's closer
    process.nextTick = realNextTick; // the replacement uninstalled, its queue never flushed
    await new Promise((resolve) => setImmediate(resolve));
    const outcome = await Promise.race([
      registry.invoke('hang', {}).then((result) => result.content),
      new Promise((resolve) => setTimeout(resolve, 2_000, 'hung')),
    ]);
    for (const callback of queued.splice(0)) callback(); // the user's queue flushed at last (the test's own cleanup)
    expect(outcome).toMatch(/within 50 ms/);
    expect(aborted).toBe(true);
  });
});
