/**
 * The turn's closer (src/deadlines.ts): a turn closed by the process's own `process.nextTick` is not compared with
 * `process.nextTick` on every add (it calls back whatever was installed since); a turn closed by a fake clock's
 * nextTick (it carries its `clock`) is, and once that fake is gone the next add opens a turn of its own, so a
 * timeout still fires. A module loaded while a fake nextTick was installed compares every turn's closer.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Deadlines } from '../../src/deadlines.js';
import {
  addOnBreakingClock,
  installCatchingNextTick,
  node,
  queueOf,
  waitFor,
  type Node,
} from './fixtures/deadline-nodes.js';

const realNextTick = process.nextTick;

/** A fake clock's nextTick that never calls back (as one uninstalled before its clock ran): counts its calls. */
function installFakeNextTick(): { calls: number } {
  const seen = { calls: 0 };
  const fake = Object.assign(
    (..._args: unknown[]): void => {
      seen.calls++;
    },
    { clock: {} },
  );
  process.nextTick = fake as unknown as typeof process.nextTick;
  return seen;
}

afterEach(() => {
  process.nextTick = realNextTick;
  vi.resetModules();
});

describe("the deadlines' turn closer", () => {
  it('a turn closed by a fake nextTick that never called back: the next add, after the fake is gone, opens its own', async () => {
    const { deadlines, expired } = queueOf();
    await new Promise((r) => setImmediate(r));
    const fake = installFakeNextTick();
    deadlines.add(node('under the fake'), 20);
    expect(fake.calls).toBeGreaterThan(0); // the turn's closer is the fake: it never calls back
    process.nextTick = realNextTick;
    deadlines.add(node('after'), 20);
    await waitFor(expired, 2, 2_000);
    expect(expired.sort()).toEqual(['after', 'under the fake']);
    expect(deadlines.size).toBe(0);
  });

  it("a fake nextTick installed while the process's own closes the turn: the add joins that turn, which still closes", async () => {
    const { deadlines, expired } = queueOf();
    await new Promise((r) => setImmediate(r));
    deadlines.add(node('first'), 20); // the turn's closer: the process's own nextTick
    const fake = installFakeNextTick();
    deadlines.add(node('second'), 20);
    process.nextTick = realNextTick;
    expect(fake.calls).toBe(0); // no turn of its own behind a closer that may never call back
    await waitFor(expired, 2, 2_000);
    expect(expired).toEqual(['first', 'second']);
    expect(deadlines.size).toBe(0);
  });

  it('loaded while a fake nextTick was installed: that fake is not taken for the own one', async () => {
    vi.resetModules();
    const fake = installFakeNextTick();
    const loadedUnder = process.nextTick;
    const loaded = await import('../../src/deadlines.js');
    process.nextTick = realNextTick;
    expect(loaded.Deadlines).not.toBe(Deadlines); // a fresh module, read under the fake
    const expired: string[] = [];
    const deadlines: Deadlines<Node> = new loaded.Deadlines<Node>((deadline) => {
      deadlines.remove(deadline);
      expired.push(deadline.label);
    });
    await new Promise((r) => setImmediate(r));
    process.nextTick = loadedUnder; // the same fake again: the turn's closer, which never calls back
    deadlines.add(node('under the fake'), 20);
    expect(fake.calls).toBeGreaterThan(0);
    process.nextTick = realNextTick;
    deadlines.add(node('after'), 20);
    await waitFor(expired, 2, 2_000);
    expect(expired.sort()).toEqual(['after', 'under the fake']);
  });
});

describe('the turn closers sharing one tick (runClosers), one of them throwing', () => {
  const realPerformance = Object.getOwnPropertyDescriptor(globalThis, 'performance')!;

  afterEach(() => {
    Object.defineProperty(globalThis, 'performance', realPerformance);
  });

  it('the closers after a throwing one still run (their turns close); its error is thrown from the tick', async () => {
    await new Promise((r) => setImmediate(r));
    const throwing = new Deadlines<Node>(() => undefined, { holdProcess: false });
    const other = new Deadlines<Node>(() => undefined, { holdProcess: false });
    const caught = installCatchingNextTick();
    const broken = new Error('the clock broke');
    const first = node('first');
    const second = node('second');
    const breakClock = addOnBreakingClock(throwing, first, 60_000, broken);
    other.add(second, 60_000);
    breakClock();
    process.nextTick = realNextTick;
    await new Promise((r) => setImmediate(r));
    expect(first.turn!.closed).toBe(Infinity); // its closer threw
    expect(second.turn!.closed).not.toBe(Infinity);
    expect(caught).toHaveLength(1);
    expect(caught[0]).toBe(broken);
    throwing.remove(first);
    other.remove(second);
  });

  it('two closers throwing: every closer still runs, and both errors are thrown together (an AggregateError)', async () => {
    await new Promise((r) => setImmediate(r));
    const queues = [0, 1, 2].map(() => new Deadlines<Node>(() => undefined, { holdProcess: false }));
    const caught = installCatchingNextTick();
    const errors = [new Error('the first clock broke'), new Error('the second clock broke')];
    const nodes = [node('first'), node('second'), node('third')];
    const breakFirst = addOnBreakingClock(queues[0]!, nodes[0]!, 60_000, errors[0]!);
    const breakSecond = addOnBreakingClock(queues[1]!, nodes[1]!, 60_000, errors[1]!);
    queues[2]!.add(nodes[2]!, 60_000);
    breakFirst();
    breakSecond();
    process.nextTick = realNextTick;
    await new Promise((r) => setImmediate(r));
    expect(nodes.map((n) => n.turn!.closed === Infinity)).toEqual([true, true, false]);
    expect(caught).toHaveLength(1);
    expect(caught[0]).toBeInstanceOf(AggregateError);
    expect((caught[0] as AggregateError).errors).toEqual(errors);
    queues.forEach((deadlines, i) => deadlines.remove(nodes[i]!));
  });
});
