/**
 * Attack on runClosers (src/deadlines.ts, 9a0ce66): the turn closers sharing one tick, one of them throwing.
 * A closer that throws must neither keep the closers after it from running nor leave the tick's state (`closers`,
 * `closersTick`) such that a closer added while the loop runs, or a later turn, is never closed: a deadline of such a
 * turn would then come due only when its queue's timer fires, which may be armed far ahead (a 60 s deadline).
 * Each test fails on main (8f8ab6a: the closers after the thrower are dropped) and passes on 9a0ce66; the first also
 * fails with `closersTick = null` moved after the loop (a closer added during it is then never scheduled).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Deadlines } from '../../src/deadlines.js';
import {
  addOnBreakingClock,
  installCatchingNextTick,
  node,
  queueOf,
  waitFor,
  type Node,
} from '../gate/fixtures/deadline-nodes.js';

const realNextTick = process.nextTick;
const realPerformance = Object.getOwnPropertyDescriptor(globalThis, 'performance')!;
const realClock = performance;

afterEach(() => {
  process.nextTick = realNextTick;
  Object.defineProperty(globalThis, 'performance', realPerformance);
});

describe('atk-smallfix: runClosers with a throwing closer', () => {
  it('a closer added while the loop runs (after the throw) still closes its turn, and its deadline fires', async () => {
    await new Promise((r) => setImmediate(r));
    const thrower = new Deadlines<Node>(() => undefined, { holdProcess: false });
    const b = queueOf();
    const c = queueOf();
    // c's timer armed 60 s ahead: its next deadline comes due on time only if its turn is closed by a closer.
    c.deadlines.add(node('c-far'), 60_000);
    await new Promise((r) => setImmediate(r));
    const caught = installCatchingNextTick();
    const breakClock = addOnBreakingClock(thrower, node('t'), 60_000, new Error('broke'));
    // b's turn is read on a clock whose next read (b's closer, after the thrower's) adds to c: a closer added
    // while the loop runs.
    let armed = false;
    let added = false;
    const clock = {
      now: (): number => {
        if (armed && !added) {
          added = true;
          c.deadlines.add(node('c'), 30);
        }
        return realClock.now();
      },
    };
    Object.defineProperty(globalThis, 'performance', { value: clock, configurable: true, writable: true });
    try {
      b.deadlines.add(node('b'), 40);
    } finally {
      Object.defineProperty(globalThis, 'performance', realPerformance);
    }
    armed = true;
    breakClock();
    await new Promise((r) => setImmediate(r));
    process.nextTick = realNextTick;
    expect(added).toBe(true);
    await waitFor(c.expired, 1, 2_000);
    await waitFor(b.expired, 1, 2_000);
    expect(c.expired).toEqual(['c']);
    expect(b.expired).toEqual(['b']);
    expect(caught).toHaveLength(1);
  });

  it('after a throw, a later turn of another queue whose timer is armed far ahead fires on time', async () => {
    await new Promise((r) => setImmediate(r));
    const thrower = new Deadlines<Node>(() => undefined, { holdProcess: false });
    const b = queueOf();
    b.deadlines.add(node('far'), 60_000); // b's timer armed 60 s ahead
    await new Promise((r) => setImmediate(r));
    const caught = installCatchingNextTick();
    const breakClock = addOnBreakingClock(thrower, node('t'), 60_000, new Error('broke'));
    b.deadlines.add(node('near'), 30);
    breakClock();
    await new Promise((r) => setImmediate(r));
    // A later turn of b, the same nextTick still installed (no new closer of b's own forced by another nextTick).
    b.deadlines.add(node('near2'), 30);
    process.nextTick = realNextTick;
    await waitFor(b.expired, 2, 1_000);
    expect(b.expired).toEqual(['near', 'near2']);
    expect(caught).toHaveLength(1);
  });
});
