/**
 * Attacks on 9a60b74's one nextTick for every deadline queue's turn (src/deadlines.ts, closeAfterTurn) with two
 * queues, as a gateway tools/call has (the gate's and its raw request's): a queue's turn closer pending on the real
 * tick when a nextTick that calls back at once (user code's) is installed and another queue opens a turn (the shared
 * run then runs synchronously, closing the first queue's turn early and the second's before its deadline is
 * linked); and a replacement without a `clock` that holds what it is handed (never flushed) taking the shared run,
 * then uninstalled. Every deadline must still come due, none early.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { node, queueOf, waitFor } from '../gate/fixtures/deadline-nodes.js';

const realNextTick = process.nextTick;

afterEach(() => {
  process.nextTick = realNextTick;
});

describe('two deadline queues, one shared turn close', () => {
  it('a sync nextTick installed while the shared close is pending on the real one: both come due, not early', async () => {
    const gate = queueOf();
    const raw = queueOf();
    await new Promise((resolve) => setImmediate(resolve));
    const start = performance.now();
    gate.deadlines.add(node('g'), 40); // pending on the real tick
    process.nextTick = ((callback: (...args: unknown[]) => void, ...args: unknown[]) =>
      callback(...args)) as typeof process.nextTick;
    raw.deadlines.add(node('r'), 20); // the shared run, at once: closes g's turn and r's (empty) before r is linked
    raw.deadlines.add(node('r2'), 20);
    gate.deadlines.add(node('g2'), 40);
    process.nextTick = realNextTick;
    await waitFor(raw.expired, 2);
    await waitFor(gate.expired, 2);
    expect(raw.expired).toEqual(['r', 'r2']);
    expect(gate.expired).toEqual(['g', 'g2']);
    expect(performance.now() - start).toBeGreaterThanOrEqual(39);
    expect(gate.deadlines.size + raw.deadlines.size).toBe(0);
  });

  it('a holding nextTick (no clock) takes the shared run and is uninstalled unflushed: both queues still come due', async () => {
    const gate = queueOf();
    const raw = queueOf();
    await new Promise((resolve) => setImmediate(resolve));
    const held: (() => void)[] = [];
    process.nextTick = ((callback: (...args: unknown[]) => void, ...args: unknown[]) =>
      void held.push(() => callback(...args))) as typeof process.nextTick;
    gate.deadlines.add(node('g'), 30);
    raw.deadlines.add(node('r'), 20);
    process.nextTick = realNextTick;
    // Later turns on the real tick, each queue again.
    await new Promise((resolve) => setImmediate(resolve));
    raw.deadlines.add(node('r2'), 20);
    gate.deadlines.add(node('g2'), 30);
    await waitFor(raw.expired, 2);
    await waitFor(gate.expired, 2);
    expect(raw.expired).toEqual(['r', 'r2']);
    expect(gate.expired).toEqual(['g', 'g2']);
    expect(held.length).toBeGreaterThan(0);
  });
});
