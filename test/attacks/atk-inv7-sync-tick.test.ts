/**
 * Attack on inv7's turn lists (src/deadlines.ts): a deadline added while a turn is open is linked in the turn, and
 * moves to its queue when the turn closes. `#open` hands the new turn to `process.nextTick` before the deadline is
 * linked; a replacement nextTick that calls back at once (user code: a synchronous shim, in scope as the other
 * replaced-nextTick attacks are) closes the turn there, empty, and the deadline is then linked into a closed turn that
 * nothing moves any more. On 0b0ab6b its timeout never fires, and removing it (taken for one in its queue: its turn is
 * closed) empties its queue, so another call's timeout, queued before, never fires either. Before inv7 the deadline
 * went to its queue at once and both fired.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { node, queueOf, waitFor } from '../gate/fixtures/deadline-nodes.js';
import { hangingTool } from './fixtures/hanging-tool.js';

const realNextTick = process.nextTick;

/** A nextTick that calls back at once. */
function installSyncNextTick(): void {
  process.nextTick = ((callback: (...args: unknown[]) => void, ...args: unknown[]) => {
    callback(...args);
  }) as typeof process.nextTick;
}

afterEach(() => {
  process.nextTick = realNextTick;
});

describe('a nextTick that calls back at once', () => {
  it('a deadline added under it still comes due', async () => {
    const { deadlines, expired } = queueOf();
    installSyncNextTick();
    const a = node('a');
    deadlines.add(a, 20);
    process.nextTick = realNextTick;
    await waitFor(expired, 1);
    expect(expired).toEqual(['a']);
    expect(deadlines.size).toBe(0);
  });

  it('with queueMicrotask calling back at once too, a deadline added under both still comes due', async () => {
    const { deadlines, expired } = queueOf();
    const realQueueMicrotask = globalThis.queueMicrotask;
    installSyncNextTick();
    globalThis.queueMicrotask = (callback: () => void): void => callback();
    try {
      deadlines.add(node('a'), 20);
      deadlines.add(node('b'), 30);
    } finally {
      globalThis.queueMicrotask = realQueueMicrotask;
      process.nextTick = realNextTick;
    }
    await waitFor(expired, 2);
    expect(expired).toEqual(['a', 'b']);
    expect(deadlines.size).toBe(0);
  });

  it('removing a deadline added under it leaves the deadlines queued before it in their queue', async () => {
    const { deadlines, expired } = queueOf();
    const h = node('h');
    deadlines.add(h, 20);
    await new Promise((resolve) => realNextTick(resolve)); // h's turn closed: h is in the 20 ms queue
    installSyncNextTick();
    const q = node('q');
    deadlines.add(q, 20);
    deadlines.remove(q); // settled in time
    process.nextTick = realNextTick;
    await waitFor(expired, 1);
    expect(expired).toEqual(['h']);
    expect(deadlines.size).toBe(0);
  });

  it('a hanging tool invoked under it is refused after its timeout and aborted', async () => {
    const { registry, aborted } = hangingTool(30);
    installSyncNextTick();
    const call = registry.invoke('hang', {});
    process.nextTick = realNextTick;
    const outcome = await Promise.race([
      call.then((result) => result.content),
      new Promise((resolve) => setTimeout(resolve, 1_500, 'hung')),
    ]);
    expect(outcome).toMatch(/within 30 ms/);
    expect(aborted()).toBe(true);
  });
});
