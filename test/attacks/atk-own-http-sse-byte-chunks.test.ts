/**
 * Attack (atk-http5, 2026-12-06; the same on main's node:http): an upstream answers a raw POST with an SSE
 * stream whose one unended `data:` line comes as a chunked body of one-byte chunks (`1\r\na\r\n` …: six bytes on
 * the wire for each, all in a few large writes). Each chunk is its own `data` of the answer, and
 * upstream-sse.ts's SseEvents appends it to its held text (`this.#text + …`, a cons string) and reads a
 * character of it, which flattens the whole held text: every one-byte chunk copies everything held so far,
 * quadratic. 200 000 one-byte chunks (1.2 MB on the wire) cost the gateway ~8 s of CPU, its event loop blocked
 * for ~1.6 s at a time (every caller and tenant stalls); the held bound (MAX_RAW_ANSWER, 10 MiB of text) allows
 * 50 times more, hours of CPU for one answer. Asserted: reading grows about linearly with the chunks.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { SseEvents } from '../../src/gateway/upstream-sse.js';
import { cleanupsAfterEach } from '../harness.js';
import { rawCaller, rawTcpUpstream } from '../gateway/fixtures/raw-tcp-upstream.js';

const cleanups = cleanupsAfterEach();

/** CPU ms to read `n` one-byte chunks of one unended SSE data line. */
function cpuFor(n: number): number {
  const events = new SseEvents(() => {});
  const one = Buffer.from('a');
  events.push(Buffer.from('data: '));
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) events.push(one);
  const spent = process.cpuUsage(before);
  expect(events.held).toBeGreaterThanOrEqual(n);
  return (spent.user + spent.system) / 1000;
}

describe('an SSE answer in one-byte chunks', () => {
  it('is read in time about linear in its chunks (SseEvents: 4 times the chunks, not 16+ times the CPU)', () => {
    cpuFor(10_000); // warm-up
    const small = Math.max(cpuFor(40_000), 5);
    const large = cpuFor(160_000);
    expect(large / small).toBeLessThan(10);
  }, 120_000);

  it('through the own client: 200 000 one-byte chunks (1.2 MB on the wire) cost the gateway under 2 s of CPU', async () => {
    const started = new Set<number>();
    const { url } = await rawTcpUpstream(
      cleanups,
      (socket, _, __, connection) => {
        if (started.has(connection)) return;
        started.add(connection);
        socket.write(
          'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n',
        );
        socket.write(Buffer.from('1\r\na\r\n'.repeat(200_000)));
      },
      { framing: 'data' },
    );
    const { transport } = await rawCaller(cleanups, url);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const before = process.cpuUsage();
    void transport
      .send({ jsonrpc: '2.0', id: 'toolgate-raw:1', method: 'tools/call', params: { name: 'echo' } } as JSONRPCMessage)
      .catch(() => undefined);
    // Until the gateway is idle again (no CPU spent over 200 ms), at most 60 s.
    const start = Date.now();
    let last = process.cpuUsage(before);
    await new Promise((r) => setTimeout(r, 300));
    while (Date.now() - start < 60_000) {
      await new Promise((r) => setTimeout(r, 200));
      const now = process.cpuUsage(before);
      if (now.user + now.system - last.user - last.system < 40_000) break;
      last = now;
    }
    delay.disable();
    const spent = process.cpuUsage(before);
    expect((spent.user + spent.system) / 1000).toBeLessThan(2_000);
    expect(delay.max / 1e6).toBeLessThan(500);
  }, 120_000);
});
