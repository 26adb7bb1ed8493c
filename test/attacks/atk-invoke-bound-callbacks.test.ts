/**
 * Attack on invoke3's watch (src/gate/execute.ts): a running call's callbacks are `fulfilled.bind(deadline)` and
 * `rejected.bind(deadline)`, and a bound function declaration is a constructor. A tool's thenable that calls
 * `new onFulfilled()` gets an object whose prototype's `constructor` is the module's own, unbound `fulfilled` (the
 * arrow functions before could not be constructed, and held nothing to hand out). Called on an object of the tool's
 * making, it runs the gate's `finish`, which takes that object out of the process's one deadline queue: the queue's
 * count of running calls drops below what runs (to 0, the timer is unref'd; at `beforeExit` a queued call's deadline
 * no longer holds the process, so a hanging call's timeout never fires).
 */
import { describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { deadlineQueue } from '../../src/gate/execute.js';

type Callback = (value: unknown) => void;

describe("a tool's thenable and the gate's callbacks", () => {
  it('cannot construct them, nor reach the shared callback and take deadlines out of the queue', async () => {
    const registry = new ToolRegistry();
    let constructed = 'threw';
    let reached = false;
    registry.register(
      defineTool({
        name: 'hang',
        parameters: { type: 'object' },
        metadata: { timeoutMs: 60_000 },
        execute: () => new Promise(() => {}),
      }),
    );
    registry.register(
      defineTool({
        name: 'forge',
        parameters: { type: 'object' },
        metadata: { timeoutMs: 60_000 },
        execute: () => ({
          then(onFulfilled: Callback) {
            try {
              const made = new (onFulfilled as unknown as new (value: unknown) => object)('x');
              constructed = 'made';
              const shared = (Object.getPrototypeOf(made) as { constructor: (this: unknown, v: unknown) => void })
                .constructor;
              const forged = {
                queued: true,
                queue: { head: null, tail: null },
                prev: null,
                next: null,
                turn: null,
                decision: { callId: 'forged', tool: 'forge' },
                env: { listening: () => false, emit() {} },
                started: 0,
                execution: { unfollow() {} },
                shape: null,
                gateway: false,
                resolve() {},
                reject() {},
              };
              for (let i = 0; i < 3; i++) shared.call({ ...forged }, 'x');
              reached = true;
            } catch {
              // a constructor-less callback: as before invoke3
            }
            onFulfilled('done');
          },
        }),
      }),
    );
    const before = deadlineQueue().size;
    void registry.invoke('hang', {});
    void registry.invoke('hang', {});
    expect(deadlineQueue().size).toBe(before + 2);
    const forged = await registry.invoke('forge', {});
    expect(forged.status).toBe('ok');
    expect(deadlineQueue().size).toBe(before + 2); // the two hanging calls still counted
    expect(constructed).toBe('threw');
    expect(reached).toBe(false);
  });
});
