/**
 * GrowingBytes (src/growing-bytes.ts), which holds a raw POST's JSON (or error) answer as it comes: the
 * same bytes as the chunks joined (as upstream-raw-post.ts's `Buffer.concat` of its chunks gave), on random
 * chunks; a chunk changed after it was pushed changes nothing held once a second came; one-byte chunks hold about
 * their bytes. And the unfinished line of the own client's reader (http-own-reader.ts): parts of chunks, copied.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrowingBytes } from '../../src/growing-bytes.js';

describe('GrowingBytes', () => {
  it('holds the chunks joined', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 9000 }), { maxLength: 40 }), (arrays) => {
        const chunks = arrays.map((a) => Buffer.from(a));
        const held = new GrowingBytes(1 << 20);
        for (const chunk of chunks) held.push(chunk);
        const joined = Buffer.concat(chunks);
        expect(held.size).toBe(joined.length);
        expect(held.bytes().equals(joined)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('holds parts of chunks (and whole chunks) joined', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.uint8Array({ maxLength: 600 }), fc.nat(), fc.nat(), fc.boolean()).map(([a, x, y, whole]) => {
            const chunk = Buffer.from(a);
            const from = whole ? 0 : x % (chunk.length + 1);
            return { chunk, from, to: whole ? chunk.length : from + (y % (chunk.length - from + 1)), whole };
          }),
          { maxLength: 40 },
        ),
        fc.integer({ min: 1, max: 5000 }),
        (parts, least) => {
          const held = new GrowingBytes(1 << 20, least);
          for (const { chunk, from, to, whole } of parts)
            if (whole) held.push(chunk);
            else held.pushPart(chunk, from, to);
          const joined = Buffer.concat(parts.map(({ chunk, from, to }) => chunk.subarray(from, to)));
          expect(held.size).toBe(joined.length);
          expect(held.bytes().equals(joined)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('copies a part of a chunk at once (a view would keep the whole chunk), in a buffer of its least capacity', () => {
    const chunk = Buffer.from('HTTP/1.1 200 OK\r\nX-A: b');
    const held = new GrowingBytes(16_384, 256);
    held.pushPart(chunk, 17);
    chunk.fill(0x78);
    expect(held.bytes().toString()).toBe('X-A: b');
    expect(held.bytes().buffer.byteLength).toBe(256);
  });

  it('copies what it holds once a second chunk comes', () => {
    const first = Buffer.from('abc');
    const held = new GrowingBytes(100);
    held.push(first);
    held.push(Buffer.from('de'));
    first.fill(0x78);
    expect(held.bytes().toString()).toBe('abcde');
  });

  it('holds one-byte chunks in a buffer of at most twice their bytes, never past its bound', () => {
    const held = new GrowingBytes(100_000);
    const one = Buffer.from('a');
    for (let i = 0; i < 100_000; i++) held.push(one);
    expect(held.bytes().buffer.byteLength).toBeLessThanOrEqual(100_000);
    expect(held.bytes().toString()).toBe('a'.repeat(100_000));
  });
});
