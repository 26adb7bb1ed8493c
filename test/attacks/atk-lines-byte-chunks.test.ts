/**
 * Attack (atk-lines, 2026-12-06, on 7b688d7): src/lines.ts holds an unfinished line as the chunks it came in
 * (`#pieces`), joined once at its end, and StdioLines bounds it by STDIO_DEFAULT_MAX_BUFFER_SIZE (10 MiB) in
 * bytes, not in chunks. A stdio peer (the MCP client on the gateway's stdin, or an upstream on its stdout) that
 * paces its writes byte by byte makes every byte a Buffer of its own in the gateway: a real pipe written one byte
 * per write(2) gave the gateway's reader ~28,000 chunks for 300 KB (~8 bytes each) and ~5.3 MB of heap for it
 * (~190 bytes a chunk), so the 10 MiB bound lets one-byte chunks hold ~2 GB. (Before 7b688d7 a Buffer.concat per
 * chunk held the bytes but cost a copy of the line per chunk: quadratic CPU.) Asserted through the gateway's own
 * stdio transport (FastStdioTransport, a data event per chunk): 300,000 one-byte chunks of one unfinished line
 * hold under 6 MB and cost under 3 s of CPU (small chunks copied together: 0.45 MB, 0.22 s; a Buffer per
 * chunk, on 11fe236: 62.6 MB, 0.71 s).
 */
import { PassThrough } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { FastStdioTransport } from '../../src/gateway/fastpath.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const CHUNKS = 300_000;

describe('a stdio line in one-byte chunks', () => {
  it('holds not much more than its bytes, at a cost linear in them (300,000 chunks: under 6 MB, under 3 s)', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const transport = new FastStdioTransport(stdin, stdout);
    const errors: Error[] = [];
    transport.onerror = (error) => errors.push(error);
    await transport.start();
    gc();
    const before = process.memoryUsage();
    const cpu = process.cpuUsage();
    let events = 0;
    stdin.on('data', () => events++);
    // Each chunk its own backing store, as a pipe's reads are.
    for (let i = 0; i < CHUNKS; i++) stdin.write(Buffer.allocUnsafeSlow(1).fill(0x61));
    while (events < CHUNKS) await new Promise((r) => setImmediate(r));
    const spent = process.cpuUsage(cpu);
    gc();
    const after = process.memoryUsage();
    const held = after.heapUsed - before.heapUsed + after.arrayBuffers - before.arrayBuffers;
    expect(errors).toEqual([]);
    expect(held / 2 ** 20).toBeLessThan(6);
    expect((spent.user + spent.system) / 1e6).toBeLessThan(3);
    // The line is still read whole when its end comes.
    const messages: unknown[] = [];
    transport.onmessage = (message) => messages.push(message);
    stdin.write('\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    while (messages.length === 0) await new Promise((r) => setImmediate(r));
    expect(messages).toEqual([{ jsonrpc: '2.0', method: 'notifications/initialized' }]);
    await transport.close();
  }, 60_000);
});
