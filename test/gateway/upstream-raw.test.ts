// The fast path's requests to a 2025-era upstream (upstream-raw.ts) in this process, on a transport that
// records what is sent: the one shared deadline timer (issue 25.2: no timer per request) times each request
// out as its own timer did — after its own timeout, in the order sent, with the SDK's error and a
// cancellation upstream — and an answered or stopped request is never timed out; plus the line reader and
// the two helpers the gateway's per-call path uses instead of the runtime's (auditTime, the URI memo).
import { getEventListeners } from 'node:events';
import { SdkError, SdkErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { auditTime } from '../../src/gateway/audit.js';
import { RawRequests, StdioLines } from '../../src/gateway/upstream-raw.js';
import { normalResourceUri } from '../../src/policy-file/uri.js';
import { idOf, RAW_TOOL, recorder } from './fixtures/raw-recorder.js';

const TOOL = RAW_TOOL;

const cancelled = (sent: JSONRPCMessage[]): unknown[] =>
  sent
    .filter((m) => (m as { method?: string }).method === 'notifications/cancelled')
    .map((m) => (m as unknown as { params: { requestId: unknown } }).params.requestId);

afterEach(() => {
  vi.useRealTimers();
});

describe('RawRequests: one deadline timer for the requests in flight', () => {
  it('times out each request after its own timeout, in the order of the deadlines, as the SDK does', async () => {
    vi.useFakeTimers();
    const { transport, sent } = recorder();
    const raw = new RawRequests(() => transport);
    const outcomes: string[] = [];
    const call = (n: number, timeout: number) =>
      raw.callTool({ name: 'echo', arguments: { n } }, TOOL, { timeout }).then(
        () => outcomes.push(`${n} answered`),
        (error: unknown) => {
          expect(error).toBeInstanceOf(SdkError);
          expect((error as SdkError).code).toBe(SdkErrorCode.RequestTimeout);
          expect((error as SdkError).data).toEqual({ timeout });
          outcomes.push(`${n} timed out`);
        },
      );
    const a = call(1, 1000);
    const b = call(2, 300); // sent later, due sooner: the timer is armed again for it
    const c = call(3, 1000);
    const d = call(4, 500);
    const ids = sent.map(idOf);
    expect(ids).toHaveLength(4);
    // Request 3 is answered before its deadline: never timed out, never cancelled.
    raw.take({ jsonrpc: '2.0', id: ids[2]!, result: { content: [{ type: 'text', text: 'ok' }] } } as JSONRPCMessage);
    await vi.advanceTimersByTimeAsync(299);
    expect(outcomes).toEqual(['3 answered']);
    await vi.advanceTimersByTimeAsync(2);
    expect(outcomes).toEqual(['3 answered', '2 timed out']);
    await vi.advanceTimersByTimeAsync(200);
    expect(outcomes).toEqual(['3 answered', '2 timed out', '4 timed out']);
    await vi.advanceTimersByTimeAsync(499);
    expect(outcomes).toEqual(['3 answered', '2 timed out', '4 timed out', '1 timed out']);
    await Promise.all([a, b, c, d]);
    // The upstream is told of each request that timed out, under its own id, once.
    expect(cancelled(sent)).toEqual([ids[1], ids[3], ids[0]]);
    // A late answer to a request that timed out is taken off the wire and dropped.
    expect(raw.take({ jsonrpc: '2.0', id: ids[0]!, result: { content: [] } } as JSONRPCMessage)).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('arms no timer per request: sequential calls with one timeout keep one timer, unref’d', async () => {
    const { transport, sent } = recorder();
    const raw = new RawRequests(() => transport);
    const made = vi.spyOn(globalThis, 'setTimeout');
    try {
      for (let i = 0; i < 50; i++) {
        const pending = raw.callTool({ name: 'echo', arguments: {} }, TOOL, { timeout: 60_000 });
        raw.take({ jsonrpc: '2.0', id: idOf(sent.at(-1)!), result: { content: [] } } as JSONRPCMessage);
        await pending;
      }
      // The one timer is armed when the event loop's turn closes (src/deadlines.ts' coarse clock), not per call.
      await new Promise((resolve) => setImmediate(resolve));
      expect(made).toHaveBeenCalledTimes(1);
      const timer = made.mock.results[0]!.value as NodeJS.Timeout;
      expect(timer.hasRef()).toBe(false);
    } finally {
      made.mockRestore();
    }
  });

  it('a stopped request fails at once with its reason and is not timed out later; a closed connection fails the rest', async () => {
    vi.useFakeTimers();
    const { transport, sent } = recorder();
    const raw = new RawRequests(() => transport);
    const stop = new AbortController();
    const stopped = raw.readResource({ uri: 'docs://a' }, { timeout: 100, signal: stop.signal });
    const open = raw.readResource({ uri: 'docs://b' }, { timeout: 100 });
    stop.abort(new SdkError(SdkErrorCode.RequestTimeout, 'the client gave up'));
    await expect(stopped).rejects.toThrow('the client gave up');
    raw.fail();
    await expect(open).rejects.toThrow('Connection closed');
    await vi.advanceTimersByTimeAsync(200);
    expect(cancelled(sent)).toEqual([idOf(sent[0]!)]);
  });

  it('a request whose envelope cannot be made, or whose send throws, fails at once and leaves nothing pending', async () => {
    vi.useFakeTimers();
    const { transport, sent } = recorder();
    const raw = new RawRequests(() => transport);
    const stop = new AbortController();
    // A 2026-07-28 wire whose envelope throws (the Client has none): nothing is sent, nothing waits.
    const wire = {
      envelope: () => {
        throw new Error('toolgate gateway: no 2026-07-28 envelope; nothing was sent');
      },
      result: () => ({}),
    };
    const enveloped = raw.callTool({ name: 'echo', arguments: {} }, TOOL, { timeout: 100, signal: stop.signal }, wire);
    await expect(enveloped).rejects.toThrow('no 2026-07-28 envelope');
    // A transport that throws rather than rejects: the call fails now; its deadline never stops it upstream.
    const thrown = new RawRequests(() => ({
      ...transport,
      send: (message: JSONRPCMessage) => {
        if ((message as { method?: string }).method === 'tools/call') throw new Error('the transport broke');
        return transport.send(message);
      },
    }));
    await expect(
      thrown.callTool({ name: 'echo', arguments: {} }, TOOL, { timeout: 100, signal: stop.signal }),
    ).rejects.toThrow('the transport broke');
    // No abort listener left on the call's signal, no deadline left to fire: nothing sent, not even a cancel.
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(200);
    stop.abort(new SdkError(SdkErrorCode.RequestTimeout, 'the client gave up'));
    await vi.advanceTimersByTimeAsync(10);
    expect(sent).toEqual([]);
  });
});

describe('RawRequests: the deadline and abort listener set after the write (issue 25.2)', () => {
  it('a request its transport answers inside send() is settled: no listener, no deadline left behind', async () => {
    vi.useFakeTimers();
    const { transport, sent } = recorder();
    const raw: RawRequests = new RawRequests(() => ({
      ...transport,
      send: (message: JSONRPCMessage) => {
        const id = (message as { id?: unknown }).id;
        if (typeof id === 'string') raw.take({ jsonrpc: '2.0', id, result: { content: [] } } as JSONRPCMessage);
        return transport.send(message);
      },
    }));
    const stop = new AbortController();
    await expect(
      raw.callTool({ name: 'echo', arguments: {} }, TOOL, { timeout: 100, signal: stop.signal }),
    ).resolves.toEqual({ content: [] });
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    // Nothing left to time out or stop: no cancellation upstream, ever.
    await vi.advanceTimersByTimeAsync(200);
    stop.abort(new SdkError(SdkErrorCode.RequestTimeout, 'the client gave up'));
    await vi.advanceTimersByTimeAsync(10);
    expect(cancelled(sent)).toEqual([]);
  });

  it('a request whose signal aborts inside send() is stopped at once, as its listener stopped it', async () => {
    vi.useFakeTimers();
    const { transport, sent } = recorder();
    const stop = new AbortController();
    const raw = new RawRequests(() => ({
      ...transport,
      send: (message: JSONRPCMessage) => {
        const sending = transport.send(message);
        if ((message as { method?: string }).method === 'resources/read')
          stop.abort(new SdkError(SdkErrorCode.RequestTimeout, 'the client gave up'));
        return sending;
      },
    }));
    const outcome = raw.readResource({ uri: 'docs://a' }, { timeout: 60_000, signal: stop.signal }).then(
      () => 'answered',
      (error: unknown) => (error as Error).message,
    );
    await vi.advanceTimersByTimeAsync(1);
    await expect(outcome).resolves.toMatch('the client gave up');
    expect(cancelled(sent)).toEqual([idOf(sent[0]!)]);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });
});

describe('the per-call helpers', () => {
  it('StdioLines drops one trailing \\r as the SDK reader does, and nothing else', () => {
    const lines = new StdioLines();
    lines.append(Buffer.from('{"a":1}\r\n{"b":2}\n\r\n\r\r\nx\u00e9\r\n'));
    const got: string[] = [];
    for (let l = lines.next(); l !== null; l = lines.next()) got.push(l);
    expect(got).toEqual(['{"a":1}', '{"b":2}', '', '\r', 'x\u00e9']);
    for (const text of ['{"a":1}\r', '\r', '', 'a\r\r'])
      expect(got.length > 0 && text.replace(/\r$/, '')).toBe(
        ((): string => {
          const l = new StdioLines();
          l.append(Buffer.from(`${text}\n`));
          return l.next()!;
        })(),
      );
  });

  it('auditTime writes what new Date().toISOString() writes', () => {
    vi.useFakeTimers();
    for (const at of [0, 1, 9, 10, 99, 100, 999, 1000, 1_733_300_000_123, 1_733_300_059_999, 253_402_300_799_999]) {
      vi.setSystemTime(at);
      expect(auditTime()).toBe(new Date(at).toISOString());
    }
    for (let i = 0; i < 2000; i++) {
      const at = Math.floor(Math.random() * 4_000_000_000_000);
      vi.setSystemTime(at);
      expect(auditTime()).toBe(new Date(at).toISOString());
    }
    vi.setSystemTime(-1);
    expect(auditTime()).toBe(new Date(-1).toISOString());
    vi.setSystemTime(8_640_000_000_000_000);
    expect(auditTime()).toBe(new Date(8_640_000_000_000_000).toISOString());
  });

  it('normalResourceUri answers a URI it saw lately as it did the first time, in a fresh object', () => {
    for (const uri of ['docs://%73ecret/%6Beys', 'file:///srv//data/../secrets/key', 'docs:kb/../x', 'nope', '']) {
      const first = normalResourceUri(uri);
      const again = normalResourceUri(uri);
      expect(again).toEqual(first);
      expect(again).not.toBe(first);
      (again as { uri?: string }).uri = 'changed';
      expect(normalResourceUri(uri)).toEqual(first);
    }
    // More URIs than it holds: the oldest are normalised again, the same way.
    const many = Array.from({ length: 3000 }, (_, i) => `docs://kb/${i}/%7Eitem`);
    const firsts = many.map((u) => normalResourceUri(u));
    expect(many.map((u) => normalResourceUri(u))).toEqual(firsts);
    expect(firsts[7]).toEqual({ ok: true, uri: 'docs://kb/7/~item' });
  });
});
