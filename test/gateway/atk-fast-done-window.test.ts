// Attacks on the fast path's bookkeeping AFTER the answer's write (fastpath.ts `send`: `replies.answer` in a
// try, `done()` in finally, then `#reuse`): while the answer is being written its request is still in flight.
// A FastReplies whose `answer` re-enters the FastPath (a cancellation of that id, a new request under that id,
// the connection closing) or throws must never leave an aborted controller in the pool, a finished request
// nameable by a cancellation, or a later request under the same id unnameable.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { FastPath, type FastReplies } from '../../src/gateway/fastpath.js';
import type { SessionRequest } from '../../src/gateway/session.js';

type Handler = (params: unknown, request: SessionRequest) => Promise<unknown>;

const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'x', arguments: {} } });
const cancel = (id: number) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } });
const tick = () => new Promise((resolve) => setImmediate(resolve));
const ok = { content: [{ type: 'text', text: 'ok' }] };

/**
 * A FastPath on a handler that records each request's signal; calls numbered in `hold` wait (listening to
 * their signal, the listener removed when done, as the gate does) until released or aborted.
 */
function harness(
  hold: Set<number>,
  onAnswer: (fast: FastPath, id: unknown, message: JSONRPCMessage | undefined) => void,
) {
  const seen: AbortSignal[] = [];
  const release = new Map<number, () => void>();
  const answers: { id: unknown; result: boolean }[] = [];
  const callTool: Handler = (_params, request) => {
    seen.push(request.signal);
    const n = seen.length;
    if (!hold.has(n)) return Promise.resolve(ok);
    return new Promise((resolve, reject) => {
      const onAbort = (): void => reject(new Error('stopped'));
      request.signal.addEventListener('abort', onAbort, { once: true });
      release.set(n, () => {
        request.signal.removeEventListener('abort', onAbort);
        resolve(ok);
      });
    });
  };
  const replies: FastReplies = {
    notify: async () => undefined,
    answer: (id, message) => {
      answers.push({ id, result: message !== undefined && 'result' in message });
      onAnswer(fast, id, message);
    },
  };
  const server = { getClientVersion: () => ({ name: 'test', version: '1' }) } as unknown as Server;
  const handlers = { callTool, readResource: callTool } as unknown as ConstructorParameters<typeof FastPath>[0];
  const fast = new FastPath(handlers, server, replies);
  return { fast, seen, release, answers };
}

// A write that throws escapes `send` (as before 205c3db): caught here so that the test sees the bookkeeping.
let restore: (() => void) | undefined;
afterEach(() => restore?.());
function catchRejections(): unknown[] {
  const caught: unknown[] = [];
  const before = process.rawListeners('unhandledRejection') as ((...args: unknown[]) => void)[];
  process.removeAllListeners('unhandledRejection');
  const mine = (reason: unknown): void => void caught.push(reason);
  process.on('unhandledRejection', mine);
  restore = () => {
    process.off('unhandledRejection', mine);
    for (const listener of before) process.on('unhandledRejection', listener);
    restore = undefined;
  };
  return caught;
}

describe('the fast path’s bookkeeping after the answer’s write', () => {
  it('a cancellation during the write aborts the request; its controller is never pooled, the next request runs', async () => {
    const during: boolean[] = [];
    const h = harness(new Set(), (fast, id) => {
      // The client's cancellation of the request being answered, re-entering the FastPath mid-write.
      if (id === 1) during.push(fast.take(cancel(1)));
    });
    const { fast } = h;
    expect(fast.take(call(1))).toBe(true);
    await tick();
    // The write saw the request still open: the cancellation named it and aborted its controller.
    expect(during).toEqual([true]);
    expect(h.seen[0]!.aborted).toBe(true);
    // Not pooled: the next request gets a fresh, live signal and is answered with its result.
    expect(fast.take(call(2))).toBe(true);
    expect(h.seen[1]).not.toBe(h.seen[0]);
    expect(h.seen[1]!.aborted).toBe(false);
    await tick();
    expect(h.answers).toEqual([
      { id: 1, result: true },
      { id: 2, result: true },
    ]);
    // Request 2's controller (never aborted) is pooled and serves request 3 alive.
    expect(fast.take(call(3))).toBe(true);
    expect(h.seen[2]).toBe(h.seen[1]);
    expect(h.seen[2]!.aborted).toBe(false);
  });

  it('a new request under the same id during the write stays nameable: a cancellation then stops it, not another', async () => {
    const h = harness(new Set([2]), (fast, id, message) => {
      // The client reuses id 7 while its first request's answer is being written (a held, slow request).
      if (id === 7 && message !== undefined && h.seen.length === 1) expect(fast.take(call(7))).toBe(true);
    });
    const { fast } = h;
    expect(fast.take(call(7))).toBe(true);
    await tick();
    expect(h.seen).toHaveLength(2);
    // The second request did not get the first's controller (still being answered, not yet pooled).
    expect(h.seen[1]).not.toBe(h.seen[0]);
    // A request 8 takes the first's controller from the pool, live.
    expect(fast.take(call(8))).toBe(true);
    expect(h.seen[2]).toBe(h.seen[0]);
    expect(h.seen[2]!.aborted).toBe(false);
    // The cancellation of id 7 names the second request under it (the first's bookkeeping left it alone).
    expect(fast.take(cancel(7))).toBe(true);
    expect(h.seen[1]!.aborted).toBe(true);
    expect(h.seen[2]!.aborted).toBe(false);
    await tick();
    expect(h.answers).toEqual([
      { id: 7, result: true },
      { id: 8, result: true },
      { id: 7, result: false },
    ]);
    // The cancelled controller is not pooled: request 9 gets request 8's (live), not the aborted one.
    expect(fast.take(call(9))).toBe(true);
    expect(h.seen[3]).toBe(h.seen[2]);
    expect(h.seen[3]!.aborted).toBe(false);
  });

  it('the connection closing during the write: the request is stopped and its controller not pooled', async () => {
    const h = harness(new Set(), (fast, id) => {
      if (id === 1) fast.closed();
    });
    const { fast } = h;
    expect(fast.take(call(1))).toBe(true);
    await tick();
    expect(h.seen[0]!.aborted).toBe(true);
    // (A FastPath is not used after closing; were it, the next request would still get a live signal.)
    expect(fast.take(call(2))).toBe(true);
    expect(h.seen[1]).not.toBe(h.seen[0]);
    expect(h.seen[1]!.aborted).toBe(false);
  });

  it('a write that throws still ends the request’s bookkeeping; its controller is not pooled', async () => {
    const caught = catchRejections();
    const boom = new Error('write failed');
    const h = harness(new Set(), (_fast, id) => {
      if (id === 1) throw boom;
    });
    const { fast } = h;
    expect(fast.take(call(1))).toBe(true);
    await tick();
    await tick();
    expect(caught).toEqual([boom]);
    // Ended: a cancellation of id 1 names nothing (it goes to the SDK), closing stops nothing.
    expect(fast.take(cancel(1))).toBe(false);
    fast.closed();
    expect(h.seen[0]!.aborted).toBe(false);
    // Not pooled: the write's failure leaves its controller out; the next request gets its own, live.
    expect(fast.take(call(2))).toBe(true);
    expect(h.seen[1]).not.toBe(h.seen[0]);
    expect(h.seen[1]!.aborted).toBe(false);
    await tick();
    expect(h.answers.map((a) => a.id)).toEqual([1, 2]);
  });
});
