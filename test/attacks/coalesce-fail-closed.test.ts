/**
 * Attack (issue 25, CoalescedConsume's one send path): a server step that answers something other than a list
 * of verdicts (null, an object whose length throws) must reject the calls it carried — fail closed, at once —
 * and leave the queue working. Before the one send path, both cases rejected; the step's fulfilled handler
 * now reads `verdicts.length` outside any catch: the calls never settled, and every later call queued behind
 * a step that would never end.
 */
import { describe, expect, it } from 'vitest';
import { CoalescedConsume, type SendSets } from '../../src/stores/coalesce.js';
import type { CounterCharge, CounterVerdict } from '../../src/stores/types.js';

const charge: readonly CounterCharge[] = [{ key: 'k', cost: 1, limit: 1, windowMs: 1000 }];
const ok: CounterVerdict = { allowed: true, used: [1] };

function settles<T>(promise: Promise<T>, ms = 200): Promise<'resolved' | 'rejected' | 'hung'> {
  return Promise.race([
    promise.then(
      () => 'resolved' as const,
      () => 'rejected' as const,
    ),
    new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), ms)),
  ]);
}

const garbage: readonly [string, () => unknown][] = [
  ['null', () => null],
  ['a number', () => 7],
  [
    'an object whose length throws',
    () => ({
      get length(): number {
        throw new Error('boom');
      },
    }),
  ],
];

describe('attack: a coalesced step answering garbage', () => {
  for (const [what, answer] of garbage) {
    it(`rejects its calls when the step answers ${what}, and the next step still runs`, async () => {
      let calls = 0;
      const send: SendSets = (sets) =>
        Promise.resolve(calls++ === 0 ? (answer() as readonly CounterVerdict[]) : sets.map(() => ok));
      const batch = new CoalescedConsume(send);
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        expect(await settles(batch.push(charge))).toBe('rejected');
        expect(await settles(batch.push(charge))).toBe('resolved');
        await new Promise((resolve) => setTimeout(resolve, 10));
        expect(unhandled).toEqual([]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
    });
  }

  it('a queued batch answered with garbage rejects every call in it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let step = 0;
    const send: SendSets = async (sets) => {
      const mine = step++;
      if (mine === 0) {
        await gate;
        return sets.map(() => ok);
      }
      return null as unknown as readonly CounterVerdict[];
    };
    const batch = new CoalescedConsume(send);
    const first = batch.push(charge);
    const queued = [batch.push(charge), batch.push(charge)];
    release();
    expect(await settles(first)).toBe('resolved');
    expect(await Promise.all(queued.map((p) => settles(p)))).toEqual(['rejected', 'rejected']);
  });
});
