/**
 * Attack on the deadlines' one shared turn and timer (src/deadlines.ts) across fake timers: a call started
 * under vitest's fake timers and left there (the test ends, `useRealTimers`) left the turn open with a fake
 * `setImmediate` that never runs, or the one timer armed on the fake clock: every later call in the process,
 * on real timers, then never timed out (no turn closed, no timer armed). A timer per call had no such state.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';

const hanging = (name: string, timeoutMs: number) =>
  defineTool({
    name,
    parameters: { type: 'object' },
    metadata: { timeoutMs },
    execute: (_args, { signal }) =>
      new Promise((resolve) => {
        signal.addEventListener('abort', () => resolve('late'));
      }),
  });

afterEach(() => {
  vi.useRealTimers();
});

/** A hanging call of 50 ms on real timers: its timeout, or 'hung' after 3 s. */
async function realCall(): Promise<unknown> {
  const registry = new ToolRegistry();
  registry.register(hanging('real', 50));
  return Promise.race([
    registry.invoke('real', {}).then((result) => result.content),
    new Promise((resolve) => setTimeout(resolve, 3000, 'hung')),
  ]);
}

describe('deadlines after fake timers', () => {
  it('a call left under fake timers before its turn closed: a later real call still times out', async () => {
    vi.useFakeTimers();
    const registry = new ToolRegistry();
    registry.register(hanging('fake', 1000));
    void registry.invoke('fake', {});
    vi.useRealTimers();
    expect(await realCall()).toMatch(/within 50 ms/);
  });

  it('a call left under fake timers with the timer armed on the fake clock: a later real call still times out', async () => {
    vi.useFakeTimers();
    const registry = new ToolRegistry();
    registry.register(hanging('fake', 60_000));
    void registry.invoke('fake', {});
    vi.advanceTimersByTime(1); // the turn closes, the one timer armed (fake) for 60 s
    vi.useRealTimers();
    expect(await realCall()).toMatch(/within 50 ms/);
  });
});
