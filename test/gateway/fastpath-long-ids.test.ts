/**
 * The stdio fast path keeps its requests in flight by the client's JSON-RPC id (what a cancellation names), a string id
 * by its safeKey (src/crypto.ts): V8 hashes a string past 16,383 characters by its length alone, so a client's ids of
 * one such length, differing at their end, were each compared with all the others in flight. Counted, not timed: no
 * Map is given an id that long, and a cancellation still stops exactly the request it names.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { FastPath, type FastReplies } from '../../src/gateway/fastpath.js';
import type { SessionRequest } from '../../src/gateway/session.js';
import { HASHED_LENGTH_MAX, watchLongestKey } from '../long-keys.js';

const long = (last: string) => `${'i'.repeat(20_000)}${last}`;
const longestKey = watchLongestKey();

describe("the fast path's requests in flight, by ids past 16,383 characters", () => {
  it('a cancellation stops exactly the request it names; no Map is given the id', async () => {
    const signals = new Map<string, AbortSignal>();
    const answers: { id: unknown; message: JSONRPCMessage | undefined }[] = [];
    const replies: FastReplies = {
      notify: async () => undefined,
      answer: (id, message) => void answers.push({ id, message }),
    };
    const server = { getClientVersion: () => ({ name: 'test', version: '1' }) } as unknown as Server;
    const pending = (params: unknown, request: SessionRequest) => {
      signals.set((params as { name: string }).name, request.signal);
      return new Promise((_resolve, reject) =>
        request.signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true }),
      );
    };
    const handlers = { callTool: pending, readResource: pending } as unknown as ConstructorParameters<
      typeof FastPath
    >[0];
    const fast = new FastPath(handlers, server, replies);
    const call = (id: string, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name } });
    const cancel = (id: string) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } });
    for (const last of ['a', 'b', 'c']) expect(fast.take(call(long(last), last))).toBe(true);
    expect(fast.take(cancel(long('b')))).toBe(true);
    expect(fast.take(cancel(long('d')))).toBe(false);
    expect([...signals].map(([name, signal]) => [name, signal.aborted])).toEqual([
      ['a', false],
      ['b', true],
      ['c', false],
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(answers).toEqual([{ id: long('b'), message: undefined }]); // the cancelled one: no answer written
    fast.closed();
    expect(longestKey()).toBeLessThanOrEqual(HASHED_LENGTH_MAX);
  });
});
