// Attacks on a raw request's deadline and abort listener set after its write (upstream-raw.ts, 32e2535): a
// transport whose send() answers, aborts, throws, rejects or re-enters RawRequests synchronously must leave no
// listener behind, give its outcome exactly once, and never answer a request whose signal was aborted first.
import { getEventListeners } from 'node:events';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RawRequests, type RawOutcome } from '../../src/gateway/upstream-raw.js';

type Log = string[];

function outcome(log: Log): RawOutcome {
  return {
    resolved: (value) => void log.push(`resolved ${JSON.stringify(value)}`),
    rejected: (reason) => void log.push(`rejected ${reason instanceof Error ? reason.message : String(reason)}`),
    aborted: () => void log.push('aborted'),
  };
}

/** A transport whose send() runs `inside` with the message first (synchronously), then returns `result`. */
function transport(sent: JSONRPCMessage[], inside: (message: JSONRPCMessage) => Promise<void> | void): Transport {
  return {
    start: async () => undefined,
    close: async () => undefined,
    send: (message: JSONRPCMessage) => {
      sent.push(message);
      return inside(message) ?? Promise.resolve();
    },
  } as Transport;
}

const idOf = (m: JSONRPCMessage): string => String((m as { id?: unknown }).id);
const cancels = (sent: JSONRPCMessage[]): string[] =>
  sent
    .filter((m) => (m as { method?: string }).method === 'notifications/cancelled')
    .map((m) => (m as unknown as { params: { requestId: string } }).params.requestId);
const answer = (id: string, text: string): JSONRPCMessage =>
  ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } }) as JSONRPCMessage;
const flush = () => new Promise((resolve) => setImmediate(resolve));

afterEach(() => vi.useRealTimers());

describe('attacks on a raw request whose transport acts inside send()', () => {
  it('answered inside send(): resolved once, no abort listener left; a later abort neither stops nor cancels it', async () => {
    const sent: JSONRPCMessage[] = [];
    const log: Log = [];
    const raw: RawRequests = new RawRequests(() =>
      transport(sent, (m) => {
        if ('id' in m) raw.take(answer(idOf(m), 'sync'));
      }),
    );
    const controller = new AbortController();
    raw.send('tools/call', { name: 'echo' }, { timeout: 60_000, signal: controller.signal }, outcome(log));
    expect(log).toEqual([`resolved {"content":[{"type":"text","text":"sync"}]}`]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    controller.abort(new Error('too late'));
    await flush();
    expect(log).toHaveLength(1);
    expect(cancels(sent)).toEqual([]);
  });

  it('answered inside send(): its deadline is not armed (no timeout after the answer, no timer left)', async () => {
    vi.useFakeTimers();
    const sent: JSONRPCMessage[] = [];
    const log: Log = [];
    const raw: RawRequests = new RawRequests(() =>
      transport(sent, (m) => {
        if ('id' in m) raw.take(answer(idOf(m), 'sync'));
      }),
    );
    const before = vi.getTimerCount();
    raw.send('tools/call', { name: 'echo' }, { timeout: 7_321 }, outcome(log));
    await vi.advanceTimersByTimeAsync(20_000);
    expect(log).toHaveLength(1);
    expect(cancels(sent)).toEqual([]);
    expect(vi.getTimerCount()).toBeLessThanOrEqual(before);
  });

  it('its signal aborted inside send(): stopped at once (aborted, cancelled, rejected), no listener left, no hang', async () => {
    const sent: JSONRPCMessage[] = [];
    const log: Log = [];
    const controller = new AbortController();
    const raw = new RawRequests(() =>
      transport(sent, (m) => {
        if ('id' in m) controller.abort(new Error('client went away'));
      }),
    );
    raw.send('tools/call', { name: 'echo' }, { timeout: 60_000, signal: controller.signal }, outcome(log));
    // Synchronously: not left to a 60 s deadline.
    expect(log).toEqual(['aborted', 'rejected Error: client went away']);
    expect(cancels(sent)).toEqual([idOf(sent[0]!)]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    // The upstream's answer arriving now is applied to nothing.
    expect(raw.take(answer(idOf(sent[0]!), 'late'))).toBe(true);
    await flush();
    expect(log).toHaveLength(2);
  });

  it('its signal aborted inside send() and then answered there: still a cancelled request, not answered', async () => {
    const sent: JSONRPCMessage[] = [];
    const log: Log = [];
    const controller = new AbortController();
    const raw: RawRequests = new RawRequests(() =>
      transport(sent, (m) => {
        if (!('id' in m)) return;
        controller.abort(new Error('cancelled first'));
        raw.take(answer(idOf(m), 'answered after the cancel'));
      }),
    );
    raw.send('tools/call', { name: 'echo' }, { timeout: 60_000, signal: controller.signal }, outcome(log));
    await flush();
    expect(log).toEqual(['aborted', 'rejected Error: cancelled first']);
    expect(cancels(sent)).toEqual([idOf(sent[0]!)]);
  });

  it('answered inside send() and then throwing: its outcome given once', async () => {
    const sent: JSONRPCMessage[] = [];
    const log: Log = [];
    const raw: RawRequests = new RawRequests(() =>
      transport(sent, (m) => {
        if (!('id' in m)) return;
        raw.take(answer(idOf(m), 'sync'));
        throw new Error('write failed after the answer');
      }),
    );
    raw.send('tools/call', { name: 'echo' }, { timeout: 60_000 }, outcome(log));
    await flush();
    expect(log).toHaveLength(1);
  });

  it('its signal aborted inside send() and send() then rejecting: stopped once, the rejection ignored', async () => {
    const sent: JSONRPCMessage[] = [];
    const log: Log = [];
    const controller = new AbortController();
    const raw = new RawRequests(() =>
      transport(sent, (m) => {
        if (!('id' in m)) return;
        controller.abort(new Error('stop'));
        return Promise.reject(new Error('pipe closed'));
      }),
    );
    raw.send('tools/call', { name: 'echo' }, { timeout: 60_000, signal: controller.signal }, outcome(log));
    await flush();
    expect(log).toEqual(['aborted', 'rejected Error: stop']);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('send() re-entering RawRequests (a second request, the connection failed) leaves each request settled once, nothing armed', async () => {
    vi.useFakeTimers();
    const sent: JSONRPCMessage[] = [];
    const outer: Log = [];
    const inner: Log = [];
    const controller = new AbortController();
    let depth = 0;
    const raw: RawRequests = new RawRequests(() =>
      transport(sent, (m) => {
        if (!('id' in m) || depth++ > 0) return;
        raw.send('tools/call', { name: 'inner' }, { timeout: 5_000, signal: controller.signal }, outcome(inner));
        raw.fail(); // the upstream closed while the first was written: both fail
      }),
    );
    raw.send('tools/call', { name: 'outer' }, { timeout: 5_000, signal: controller.signal }, outcome(outer));
    expect(outer).toEqual(['rejected Connection closed']);
    expect(inner).toEqual(['rejected Connection closed']);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    controller.abort();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(outer).toHaveLength(1);
    expect(inner).toHaveLength(1);
    expect(cancels(sent)).toEqual([]);
  });

  it('sent without anything inside send(): its deadline armed after the write still times it out', async () => {
    vi.useFakeTimers();
    const sent: JSONRPCMessage[] = [];
    const log: Log = [];
    const raw = new RawRequests(() => transport(sent, () => undefined));
    raw.send('tools/call', { name: 'echo' }, { timeout: 1_234 }, outcome(log));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(log).toEqual([]);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(log).toEqual(['rejected Request timed out']);
    expect(cancels(sent)).toEqual([idOf(sent[0]!)]);
  });
});

describe('attacks on a raw request whose transport throws its notifications/cancelled', () => {
  /** A transport that takes requests and throws (synchronously) on every notification. */
  const throwing = (sent: JSONRPCMessage[]): Transport =>
    transport(sent, (m) => {
      if (!('id' in m)) throw new Error('cannot write the cancel');
    });

  it('timed out: each call still fails (no hang), and the shared timer goes on for the others', async () => {
    vi.useFakeTimers();
    const sent: JSONRPCMessage[] = [];
    const first: Log = [];
    const second: Log = [];
    const raw = new RawRequests(() => throwing(sent));
    raw.send('tools/call', { name: 'a' }, { timeout: 4_321 }, outcome(first));
    raw.send('tools/call', { name: 'b' }, { timeout: 4_321 }, outcome(second));
    await vi.advanceTimersByTimeAsync(10_000).catch(() => undefined);
    expect(first).toEqual(['rejected Request timed out']);
    expect(second).toEqual(['rejected Request timed out']);
  });

  it('its signal aborted after the write: the call still fails (no hang), nothing thrown at the abort', async () => {
    const sent: JSONRPCMessage[] = [];
    const log: Log = [];
    const controller = new AbortController();
    const raw = new RawRequests(() => throwing(sent));
    raw.send('tools/call', { name: 'a' }, { timeout: 60_000, signal: controller.signal }, outcome(log));
    const uncaught: unknown[] = [];
    const onError = (error: unknown): void => void uncaught.push(error);
    process.on('uncaughtException', onError);
    try {
      controller.abort(new Error('stop'));
      await flush();
    } finally {
      process.off('uncaughtException', onError);
    }
    expect(log).toEqual(['aborted', 'rejected Error: stop']);
    expect(uncaught).toEqual([]);
  });

  it('its signal aborted inside send(): the call fails, send() itself does not throw', () => {
    const sent: JSONRPCMessage[] = [];
    const log: Log = [];
    const controller = new AbortController();
    const raw = new RawRequests(() =>
      transport(sent, (m) => {
        if (!('id' in m)) throw new Error('cannot write the cancel');
        controller.abort(new Error('stop'));
      }),
    );
    expect(() =>
      raw.send('tools/call', { name: 'a' }, { timeout: 60_000, signal: controller.signal }, outcome(log)),
    ).not.toThrow();
    expect(log).toEqual(['aborted', 'rejected Error: stop']);
  });
});
