/**
 * Attack (atk-http5, 2026-12-06): the own client's reader (src/gateway/http-own-reader.ts) bounds a head (and a
 * chunked answer's trailers) at 16 KiB, as Node does — in bytes. But an unfinished line is held as one copied
 * Buffer per read (`#held`), joined only at its end: an upstream that sends its head a byte per TCP segment (a
 * header line of ~16 000 bytes, never ended) makes the gateway hold ~16 000 Buffer objects — measured ~1.8 MB
 * retained per connection (heap ~1.6 MB, array buffers ~125 KB), over 100 times the bound, where Node's parser
 * copies the bytes into one growing buffer. A thousand concurrent calls to such an upstream hold ~1.8 GB until
 * the call timeout (the head takes 16 s at a byte a millisecond; every byte resets the silence timer). The same
 * for a 4 KiB chunk-size line (~0.45 MB). Bound asserted here: 4 times the bytes held, per connection.
 * End to end (200 raw POSTs, the upstream writing its head a byte a millisecond, 8 s, then gc): ~424 KB of heap
 * per connection on http5, ~13 KB on main's node:http (`node --expose-gc --import tsx e2e-trickle.mts`, load 1.8).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { MAX_HEAD, ResponseReader } from '../../src/gateway/http-own-reader.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Bytes retained per reader after each was fed `bytes` a byte per push (views of one buffer: nothing new). */
function retainedPerReader(bytes: Buffer, readers = 40): number {
  const ones = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
  const failed: string[] = [];
  const sink = { head() {}, body() {}, end() {}, fail: (e: Error) => void failed.push(e.message) };
  const kept: ResponseReader[] = [];
  gc();
  const before = process.memoryUsage();
  for (let r = 0; r < readers; r++) {
    const reader = new ResponseReader(sink);
    kept.push(reader);
    for (const one of ones) reader.push(one);
  }
  gc();
  const after = process.memoryUsage();
  expect(failed).toEqual([]);
  expect(kept).toHaveLength(readers);
  return (after.heapUsed - before.heapUsed + after.arrayBuffers - before.arrayBuffers) / readers;
}

describe('a head trickled a byte per read to the own client', () => {
  it('holds no more than a few times its bytes (an unended header line under the 16 KiB bound)', () => {
    const head = Buffer.from(`HTTP/1.1 200 OK\r\nX-A: ${'a'.repeat(MAX_HEAD - 400)}`);
    expect(retainedPerReader(head)).toBeLessThan(4 * MAX_HEAD);
  });

  it('holds no more than a few times its bytes (an unended chunk-size line under the 4 KiB bound)', () => {
    const line = Buffer.from(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;x=${'a'.repeat(4000)}`);
    expect(retainedPerReader(line)).toBeLessThan(4 * 4096 + 4 * 64);
  });
});
