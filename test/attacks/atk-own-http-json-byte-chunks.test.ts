/**
 * Attack (atk-http5, 2026-12-06; worse on main's node:http): a JSON answer's body is held until its end as the
 * chunks it came in (upstream-raw-post.ts's `#chunks`), bounded by MAX_RAW_ANSWER (10 MiB) in bytes — not in
 * chunks. An upstream sends it chunked in one-byte chunks (`1\r\n \r\n` …, six bytes on the wire for each, in a
 * few large writes, never ended): every byte is a Buffer of its own in the gateway. Measured: 1 MB of it holds
 * ~100 MB of heap on http5 (~186 MB on main), so the 10 MiB bound lets one call hold ~1 GB and a few
 * concurrent calls exhaust the heap (the process dies). Asserted: 1 MB held costs under 24 MB (held in one growing buffer: ~1.2 MiB; the test's own server's 6 MB write
 * may still be on the heap when it is measured: up to ~7.7 MiB seen; a Buffer per chunk: ~100 MB).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../harness.js';
import { rawCaller, rawTcpUpstream } from '../gateway/fixtures/raw-tcp-upstream.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const cleanups = cleanupsAfterEach();

describe('a JSON answer in one-byte chunks', () => {
  it('holds not much more than its bytes (1 MB held: under 24 MB of memory)', async () => {
    let written = false;
    const { url } = await rawTcpUpstream(
      cleanups,
      (socket, _, n) => {
        if (n > 1) return;
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
        socket.write(Buffer.from('1\r\n \r\n'.repeat(1_000_000)), () => (written = true));
      },
      { framing: 'data' },
    );
    const { transport } = await rawCaller(cleanups, url);
    gc();
    const before = process.memoryUsage();
    void transport
      .send({ jsonrpc: '2.0', id: 'toolgate-raw:1', method: 'tools/call', params: { name: 'echo' } } as JSONRPCMessage)
      .catch(() => undefined);
    const start = Date.now();
    while (!written && Date.now() - start < 30_000) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 1_000));
    gc();
    const after = process.memoryUsage();
    expect(written).toBe(true);
    const held = after.heapUsed - before.heapUsed + after.arrayBuffers - before.arrayBuffers;
    expect(held / 2 ** 20).toBeLessThan(24);
  }, 60_000);
});
