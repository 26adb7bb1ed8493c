/**
 * Attack on 9a60b74's one nextTick for every deadline queue's turn (src/deadlines.ts, closeAfterTurn): a closer added
 * while the nextTick it would be scheduled on was already handed the shared run is not handed to it again. Under a
 * fake clock's nextTick (vitest's with `toFake: ['nextTick']`, here one that carries its `clock` as those do) whose
 * held callbacks are dropped while it stays installed (its `reset`, `vi.clearAllTimers()`), one queue's turn (the
 * gate's) took the shared run, the reset dropped it, and another queue's turn (a gateway raw request's) opened after
 * is never closed when the fake's ticks are run: its deadline waits for the queue's timer, armed for a deadline 10 s
 * later. Before 9a60b74 each queue handed the fake its own closer. Fails on 8df4742 (`[]`), passes on f4aba2e.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { node, queueOf, waitFor } from '../gate/fixtures/deadline-nodes.js';

const realNextTick = process.nextTick;

afterEach(() => {
  process.nextTick = realNextTick;
});

/** A fake clock's nextTick: callbacks held until `run`, dropped by `reset` (it stays installed). */
function fakeTick(): { run(): void; reset(): void } {
  let jobs: (() => void)[] = [];
  const tick = Object.assign(
    (callback: (...args: unknown[]) => void, ...args: unknown[]): void => void jobs.push(() => callback(...args)),
    { clock: {} },
  );
  process.nextTick = tick as unknown as typeof process.nextTick;
  return {
    run: () => {
      while (jobs.length > 0) jobs.shift()!();
    },
    reset: () => {
      jobs = [];
    },
  };
}

describe("a fake clock's nextTick reset while a shared turn close was held", () => {
  it("another queue's turn opened after the reset is still closed by the fake's ticks, and its deadline comes due", async () => {
    const gate = queueOf();
    const raw = queueOf();
    raw.deadlines.add(node('long'), 10_000); // the raw queue's timer armed for 10 s
    await new Promise((resolve) => setImmediate(resolve));
    const fake = fakeTick();
    gate.deadlines.add(node('g'), 10_000); // the gate's turn: handed to the fake
    fake.reset(); // vi.clearAllTimers(): what the fake held is dropped
    raw.deadlines.add(node('r'), 20); // the raw request's turn
    fake.run(); // vi.runAllTicks()
    process.nextTick = realNextTick;
    await waitFor(raw.expired, 1, 500);
    expect(raw.expired).toEqual(['r']);
  });
});
