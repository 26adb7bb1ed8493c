/**
 * The deadlines' coarse clock (src/deadlines.ts): one clock read per turn of the event loop, not per call.
 * A deadline is never early (a call started late in a long turn still gets its whole timeout), is late by at most
 * the rest of its turn, a turn closes after TURN_CALLS deadlines, and `tool_executed` keeps an exact duration
 * when someone listened as the call started (else from its turn's opening: never shorter).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { TURN_CALLS } from '../../src/deadlines.js';
import { deadlineQueue } from '../../src/gate/execute.js';

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

function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('deadlines on a coarse clock', () => {
  it('a call started late in a long turn still gets its whole timeout (never early), and not much more', async () => {
    const registry = new ToolRegistry();
    registry.register(hanging('first', 40));
    registry.register(hanging('second', 40));
    // Both in one turn of the event loop: the turn opens with the first, the second starts 120 ms later.
    const first = registry.invoke('first', {});
    busy(120);
    const secondStarted = performance.now();
    const second = registry.invoke('second', {}).then((result) => ({ result, at: performance.now() }));
    const [a, b] = await Promise.all([first, second]);
    expect(a.content).toMatch(/within 40 ms/);
    expect(b.result.content).toMatch(/within 40 ms/);
    const waited = b.at - secondStarted;
    expect(waited).toBeGreaterThanOrEqual(39); // its whole timeout (1 ms of timer rounding)
    expect(waited).toBeLessThan(40 + 400); // late by the rest of its turn (about nothing here), with CI slack
    expect(deadlineQueue().size).toBe(0);
  });

  it('reads the clock once per turn, not per call, and again after TURN_CALLS calls in one turn', async () => {
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 'quick', parameters: { type: 'object' }, execute: async () => 'ok' }));
    await registry.invoke('quick', {}); // compiled, and whatever a first call reads
    await new Promise((resolve) => setImmediate(resolve));
    const now = vi.spyOn(performance, 'now');
    const calls = TURN_CALLS + 10;
    for (let i = 0; i < calls; i++) expect((await registry.invoke('quick', {})).status).toBe('ok');
    // One read opening the turn, one closing it and opening the next at TURN_CALLS.
    expect(now.mock.calls.length).toBe(2);
    await new Promise((resolve) => setImmediate(resolve));
    // The loop moved on: the turn closed (one more read), nothing queued.
    expect(now.mock.calls.length).toBe(3);
    expect(deadlineQueue().size).toBe(0);
  });

  it("a listener timing the call gets its exact duration; one that came meanwhile gets it from the turn's opening", async () => {
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'slow',
        parameters: { type: 'object' },
        execute: () => new Promise((resolve) => setTimeout(() => resolve('ok'), 30)),
      }),
    );
    const durations: number[] = [];
    const off = registry.onChange((event) => {
      if (event.type === 'tool_executed') durations.push(event.durationMs);
    });
    busy(50); // a turn already long: an exact start is read, not the turn's
    expect((await registry.invoke('slow', {})).status).toBe('ok');
    off();
    expect(durations).toHaveLength(1);
    expect(durations[0]).toBeGreaterThanOrEqual(25);
    expect(durations[0]).toBeLessThan(1000);
    const late: number[] = [];
    const running = registry.invoke('slow', {});
    const off2 = registry.onChange((event) => {
      if (event.type === 'tool_executed') late.push(event.durationMs);
    });
    expect((await running).status).toBe('ok');
    off2();
    // Measured from its turn's opening: at least the call's own duration.
    expect(late).toHaveLength(1);
    expect(late[0]).toBeGreaterThanOrEqual(25);
  });
});
