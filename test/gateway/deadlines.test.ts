// One timer for many deadlines (src/deadlines.ts, the gateway's expiringDeadlines, issue 25): entries expire in
// order, each about its own time after it was added, a settled entry is never told; the raw requests' timeouts
// and aborts go through it and still fail the call and tell the upstream (notifications/cancelled under the raw id).
import { SdkError, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { describe, expect, it, vi } from 'vitest';
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

  it('closes the turns of two queues opened in one turn of the event loop with one nextTick (a tools/call opens both)', async () => {
    const gate = expiringDeadlines<Entry>();
    const raw = expiringDeadlines<Entry>();
    const told: string[] = [];
    // Settled first: the turns opened below are each queue's first of this turn of the event loop.
    await new Promise((r) => setImmediate(r));
    const ticks = vi.spyOn(process, 'nextTick');
    try {
      gate.add(
        entryOf('g', () => void told.push('g')),
        40,
      );
      raw.add(
        entryOf('r', () => void told.push('r')),
        20,
      );
      expect(ticks).toHaveBeenCalledTimes(1);
    } finally {
      ticks.mockRestore();
    }
    // Both turns were closed (their deadlines in their queues) and each comes due after its own timeout.
    await new Promise((r) => setTimeout(r, 100));
    expect(told).toEqual(['r', 'g']);
    expect(gate.size + raw.size).toBe(0);
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

  it('queues opening turns in one turn of the loop close them without a setImmediate, none early', async () => {
    // A gateway tools/call opens two turns in one turn of the loop (the gate's and the raw request's): they are
    // closed by a process.nextTick, not an Immediate each, which cost a pass of the check phase into JS per call
    // (issue 25.2); each deadline is still due its whole timeout after it was added.
    const queues = [expiringDeadlines<Entry>(), expiringDeadlines<Entry>(), expiringDeadlines<Entry>()];
    await new Promise((r) => setImmediate(r)); // no turn of these open from before
    const told: [string, number][] = [];
    const immediate = vi.spyOn(globalThis, 'setImmediate');
    const added: number[] = [];
    try {
      queues.forEach((queue, i) => {
        added.push(performance.now());
        queue.add(
          entryOf(`q${i}`, () => void told.push([`q${i}`, performance.now()])),
          40,
        );
      });
      await new Promise<void>((r) => process.nextTick(r));
      expect(immediate).not.toHaveBeenCalled();
    } finally {
      immediate.mockRestore();
    }
    // The next turn opens its own, and its deadline too is never early.
    await new Promise((r) => setImmediate(r));
    queues[0]!.add(
      entryOf('later', () => void told.push(['later', performance.now()])),
      40,
    );
    const laterAdded = performance.now();
    await new Promise((r) => setTimeout(r, 160));
    expect(told.map(([name]) => name).sort()).toEqual(['later', 'q0', 'q1', 'q2']);
    for (const [name, at] of told) {
      const since = name === 'later' ? laterAdded : added[Number(name.slice(1))]!;
      expect(at - since).toBeGreaterThanOrEqual(39); // its whole timeout (1 ms of timer rounding)
    }
    expect(queues.map((q) => q.size)).toEqual([0, 0, 0]);
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
