// The stdio fast path's request signals (issue 25.2): a finished request's AbortController is kept for the
// next request only when nothing can tell — never aborted, no listener left on its signal — so a
// cancellation still stops exactly the request it names, a request that left a listener behind (the SDK's
// elicitation does) gets its controller dropped, and a connection that closes stops what runs.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { FastPath, type FastReplies } from '../../src/gateway/fastpath.js';
import type { SessionRequest } from '../../src/gateway/session.js';

type Handler = (params: unknown, request: SessionRequest) => Promise<unknown>;

/** A FastPath on handlers of the test's own, its answers recorded. */
function fastPath(callTool: Handler) {
  const answers: { id: unknown; message: JSONRPCMessage | undefined }[] = [];
  const replies: FastReplies = {
    notify: async () => undefined,
    answer: (id, message) => void answers.push({ id, message }),
  };
  const server = { getClientVersion: () => ({ name: 'test', version: '1' }) } as unknown as Server;
  const handlers = { callTool, readResource: callTool } as unknown as ConstructorParameters<typeof FastPath>[0];
  return { fast: new FastPath(handlers, server, replies), answers };
}

const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'x', arguments: {} } });
const cancel = (id: number) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } });
const tick = () => new Promise((resolve) => setImmediate(resolve));
const ok = { content: [{ type: 'text', text: 'ok' }] };

describe('the fast path’s request signals', () => {
  it('reuses a finished request’s signal only while nothing can tell, and cancels exactly the request named', async () => {
    const seen: AbortSignal[] = [];
    const waiting = new Map<number, (value: unknown) => void>();
    const { fast, answers } = fastPath((params, request) => {
      seen.push(request.signal);
      const n = seen.length;
      // Call 2 waits (and listens to its signal, removing the listener when done, as the gate does).
      if (n !== 2) return Promise.resolve(ok);
      return new Promise((resolve, reject) => {
        const onAbort = (): void => reject(new Error('stopped'));
        request.signal.addEventListener('abort', onAbort, { once: true });
        waiting.set(n, (value) => {
          request.signal.removeEventListener('abort', onAbort);
          resolve(value);
        });
      });
    });
    expect(fast.take(call(1))).toBe(true);
    await tick();
    expect(answers.map((a) => a.id)).toEqual([1]);
    expect(fast.take(call(2))).toBe(true);
    // The controller of call 1 (finished, never aborted, no listener left) serves call 2.
    expect(seen[1]).toBe(seen[0]);
    // A late cancellation of call 1 names nothing in flight: call 2 goes on.
    expect(fast.take(cancel(1))).toBe(false);
    expect(seen[1]!.aborted).toBe(false);
    // Call 3 runs beside call 2: a signal of its own.
    expect(fast.take(call(3))).toBe(true);
    expect(seen[2]).not.toBe(seen[1]);
    await tick();
    // Call 2 cancelled: stopped and not answered; its controller is not kept.
    expect(fast.take(cancel(2))).toBe(true);
    expect(seen[1]!.aborted).toBe(true);
    await tick();
    // Told as the SDK tells a cancelled request's end: no message.
    expect(answers.map((a) => [a.id, a.message !== undefined])).toEqual([
      [1, true],
      [3, true],
      [2, false],
    ]);
    expect(fast.take(call(4))).toBe(true);
    expect(seen[3]!.aborted).toBe(false);
    expect(seen[3]).toBe(seen[2]);
    await tick();
    expect(answers.map((a) => [a.id, a.message !== undefined])).toEqual([
      [1, true],
      [3, true],
      [2, false],
      [4, true],
    ]);
  });

  it('drops a controller whose signal still has a listener; a closed connection stops what runs', async () => {
    const seen: AbortSignal[] = [];
    let hang = false;
    const { fast, answers } = fastPath((_params, request) => {
      seen.push(request.signal);
      if (hang) return new Promise(() => undefined);
      // A listener left behind (as the SDK's request with a signal leaves one).
      request.signal.addEventListener('abort', () => undefined);
      return Promise.resolve(ok);
    });
    fast.take(call(1));
    await tick();
    fast.take(call(2));
    expect(seen[1]).not.toBe(seen[0]);
    await tick();
    hang = true;
    fast.take(call(3));
    expect(seen[2]).not.toBe(seen[1]);
    fast.closed();
    expect(seen[2]!.aborted).toBe(true);
    expect(answers.map((a) => a.id)).toEqual([1, 2]);
  });

  it('ends a request in the step that writes its answer (after the write): nothing can name it once answered', async () => {
    const seen: AbortSignal[] = [];
    const { fast, answers } = fastPath((_params, request) => {
      seen.push(request.signal);
      return Promise.resolve(ok);
    });
    // The write itself sees its request still open (its bookkeeping ends after it, in the same step).
    const written: boolean[] = [];
    const replies: FastReplies = {
      notify: async () => undefined,
      answer: (id, message) => {
        answers.push({ id, message });
        written.push(seen.at(-1)!.aborted);
      },
    };
    expect(fast.take(call(1), replies)).toBe(true);
    await tick();
    expect(answers.map((a) => a.id)).toEqual([1]);
    expect(written).toEqual([false]);
    // Answered: a cancellation of it names nothing in flight, closing the connection stops nothing.
    expect(fast.take(cancel(1))).toBe(false);
    fast.closed();
    expect(seen[0]!.aborted).toBe(false);
    // Its controller (never aborted, no listener) serves the next request.
    expect(fast.take(call(2))).toBe(true);
    expect(seen[1]).toBe(seen[0]);
  });
});
