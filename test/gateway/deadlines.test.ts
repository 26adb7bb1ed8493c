// One timer for many deadlines (src/deadlines.ts, the gateway's expiringDeadlines, issue 25): entries expire in
// order, each about its own time after it was added, a settled entry is never told; the raw requests' timeouts
// and aborts go through it and still fail the call and tell the upstream (notifications/cancelled under the raw id).
import { SdkError, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { expiringDeadlines, type Expiring } from '../../src/deadlines.js';
import { RawRequests } from '../../src/gateway/upstream-raw.js';

/** A test's deadline: its name, told with `expire`. */
interface Entry extends Expiring<Entry> {
  readonly name: string;
}

function entryOf(name: string, expire: () => void): Entry {
  return { name, turn: null, queue: null, prev: null, next: null, queued: false, expire };
}

describe('expiringDeadlines', () => {
  it('tells each entry once, about its time after it was added, in order; a deleted entry never', async () => {
    const queue = expiringDeadlines<Entry>();
    const told: [string, number][] = [];
    const t0 = performance.now();
    const entry = (name: string): Entry => entryOf(name, () => void told.push([name, performance.now() - t0]));
    const a = entry('a');
    const b = entry('b');
    const c = entry('c');
    queue.add(a, 60);
    await new Promise((r) => setTimeout(r, 30));
    queue.add(b, 60);
    queue.add(c, 60);
    queue.remove(c);
    await new Promise((r) => setTimeout(r, 150));
    expect(told.map(([name]) => name)).toEqual(['a', 'b']);
    expect(told[0]![1]).toBeGreaterThanOrEqual(55);
    expect(told[1]![1]).toBeGreaterThanOrEqual(85);
    expect(told[1]![1]).toBeLessThan(150);
    expect(queue.size).toBe(0);
  });

  it('an entry whose expire throws does not keep the next from expiring', async () => {
    const queue = expiringDeadlines<Entry>();
    const told: string[] = [];
    const entry = (name: string): Entry =>
      entryOf(name, () => {
        told.push(name);
        throw new Error(name);
      });
    queue.add(entry('a'), 20);
    queue.add(entry('b'), 20);
    await new Promise((r) => setTimeout(r, 80));
    expect(told).toEqual(['a', 'b']);
    expect(queue.size).toBe(0);
  });
});

describe('RawRequests: a timeout and an abort without a timer per request', () => {
  it('a request past its timeout fails with the SDK’s error and the upstream is told; an aborted one too', async () => {
    const sent: JSONRPCMessage[] = [];
    const transport = { send: async (m: JSONRPCMessage) => void sent.push(m) } as unknown as Transport;
    const raw = new RawRequests(() => transport);
    const timedOut = raw.readResource({ uri: 'a://b' }, { timeout: 50 }).catch((e: unknown) => e);
    const controller = new AbortController();
    const aborted = raw.readResource({ uri: 'a://c' }, { timeout: 50_000, signal: controller.signal }).catch((e) => e);
    controller.abort(new SdkError(-32001 as never, 'stopped by the client'));
    const answered = raw.readResource({ uri: 'a://d' }, { timeout: 50 });
    raw.take({ jsonrpc: '2.0', id: 'toolgate-raw:3', result: { contents: [] } } as JSONRPCMessage);
    expect(await answered).toEqual({ contents: [] });
    expect(String(((await aborted) as Error).message)).toContain('stopped by the client');
    const error = (await timedOut) as SdkError;
    expect(error).toBeInstanceOf(SdkError);
    expect(error.message).toContain('Request timed out');
    const cancels = sent.filter((m) => (m as { method?: string }).method === 'notifications/cancelled');
    expect(cancels.map((m) => (m as unknown as { params: { requestId: string } }).params.requestId).sort()).toEqual([
      'toolgate-raw:1',
      'toolgate-raw:2',
    ]);
  });
});
