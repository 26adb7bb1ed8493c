/**
 * Attack on the deadlines' coarse clock (src/deadlines.ts) under fake timers: a tool's timeout
 * did not fire when the test advances the fake clock past it — with only `setTimeout` faked (the one timer
 * fires on the fake clock, the deadline is judged on the real `performance.now()` and re-armed), or with every
 * timer faked after a call on the real clock queued at the same timeout length (its deadline, in real time,
 * headed the queue and the fake one waited behind it). A timer per call fired in both. And the other way: a
 * timeout past Node's longest delay (2^31 - 1 ms, where the one timer is armed short) fired when that short
 * timer did, ~25 days early on the fake clock.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';

const hanging = (name: string, timeoutMs: number) =>
  defineTool({
    name,
    parameters: { type: 'object' },
    metadata: { timeoutMs },
    execute: () => new Promise(() => {}),
  });

afterEach(() => {
  vi.useRealTimers();
});

async function fakeCall(timeoutMs: number): Promise<unknown> {
  const registry = new ToolRegistry();
  registry.register(hanging('fake', timeoutMs));
  let content: unknown = null;
  void registry.invoke('fake', {}).then((result) => (content = result.content));
  await vi.advanceTimersByTimeAsync(timeoutMs + 1);
  await vi.advanceTimersByTimeAsync(10);
  return content;
}

describe('fake timers advanced past a timeout', () => {
  it('only setTimeout faked', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    expect(await fakeCall(700)).toMatch(/within 700 ms/);
  });

  it('every timer faked, after a real call of the same timeout length', async () => {
    const registry = new ToolRegistry();
    registry.register(hanging('real', 900));
    void registry.invoke('real', {});
    await new Promise((resolve) => setImmediate(resolve));
    vi.useFakeTimers();
    expect(await fakeCall(900)).toMatch(/within 900 ms/);
  });

  it('a timeout past 2^31 - 1 ms, every timer faked: not when the short-armed timer fires, at its own time', async () => {
    vi.useFakeTimers();
    const registry = new ToolRegistry();
    registry.register(hanging('long', 3_000_000_000));
    let content: unknown = 'waiting';
    void registry.invoke('long', {}).then((result) => (content = result.content));
    await vi.advanceTimersByTimeAsync(2 ** 31);
    expect(content).toBe('waiting');
    await vi.advanceTimersByTimeAsync(3_000_000_000 - 2 ** 31 + 10);
    expect(content).toMatch(/within 3000000000 ms/);
  });
});
