/**
 * src/lines.ts, the one LF-only line splitter (the stdio gateway's, the JSONL audit reader's, the tests'): on
 * random chunks, cut anywhere (inside a UTF-8 character too), read as they come or after several appends, the
 * lines are those of the joined bytes split at LF, each decoded whole, a trailing CR dropped; U+2028, U+2029 and a
 * lone CR split nothing; what it holds is counted.
 */
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Lines, linesOf } from '../../src/lines.js';

const PIECES = ['{"a":1}', '\n', '\r\n', '\r', '\u2028', '\u2029', 'é', '😀', 'x'.repeat(50), ''];

/** The lines of `bytes` as the SDK's ReadBuffer reads them: whole lines, and what is left after the last LF. */
function expected(bytes: Buffer): { lines: string[]; rest: string } {
  const lines: string[] = [];
  let from = 0;
  for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, from)) {
    lines.push(bytes.toString('utf8', from, at).replace(/\r$/, ''));
    from = at + 1;
  }
  return { lines, rest: bytes.toString('utf8', from) };
}

const cuts = fc
  .tuple(fc.array(fc.constantFrom(...PIECES), { maxLength: 40 }), fc.array(fc.nat(), { maxLength: 12 }))
  .map(([pieces, at]) => {
    const bytes = Buffer.from(pieces.join(''));
    const points = [...new Set(at.map((x) => x % (bytes.length + 1)))].sort((a, b) => a - b);
    const chunks: Buffer[] = [];
    let from = 0;
    for (const point of [...points, bytes.length]) {
      chunks.push(bytes.subarray(from, point));
      from = point;
    }
    return { bytes, chunks };
  });

describe('Lines', () => {
  it('reads the lines of the joined bytes, however they are cut and whenever they are read', () => {
    fc.assert(
      fc.property(cuts, fc.array(fc.boolean(), { minLength: 13, maxLength: 13 }), ({ bytes, chunks }, reads) => {
        const lines = new Lines();
        const got: string[] = [];
        let appended = 0;
        /** Where the line after the `n`th is in the bytes. */
        const after = (n: number): number => {
          let at = 0;
          for (let i = 0; i < n; i++) at = bytes.indexOf(10, at) + 1;
          return at;
        };
        for (const [i, chunk] of chunks.entries()) {
          lines.append(chunk);
          appended += chunk.length;
          if (reads[i] ?? true) for (let line = lines.next(); line !== null; line = lines.next()) got.push(line);
          expect(lines.size).toBe(appended - after(got.length));
        }
        for (let line = lines.next(); line !== null; line = lines.next()) got.push(line);
        const want = expected(bytes);
        expect(got).toEqual(want.lines);
        expect(lines.size).toBe(Buffer.byteLength(want.rest));
        expect(lines.rest()).toBe(want.rest);
        expect(lines.size).toBe(0);
        expect(lines.next()).toBe(null);
      }),
      { numRuns: 1000 },
    );
  });

  it('reads long lines in chunks of any size (small ones copied together, across the 64 KiB stage too)', () => {
    const line = fc
      .array(fc.constantFrom('a', 'é', '😀', '\r', '\u2028'), { minLength: 1, maxLength: 8 })
      .chain((unit) => fc.nat({ max: 60_000 }).map((n) => unit.join('').repeat(n + 1)));
    const sizes = fc.array(fc.constantFrom(1, 7, 1023, 1024, 5000, 70_000), { minLength: 1, maxLength: 20 });
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 3 }), sizes, (texts, size) => {
        const bytes = Buffer.from(texts.map((t) => `${t}\n`).join('') + texts[0]);
        const lines = new Lines();
        const got: string[] = [];
        for (let from = 0, i = 0; from < bytes.length; i++) {
          const to = Math.min(bytes.length, from + size[i % size.length]!);
          lines.append(Buffer.from(bytes.subarray(from, to)));
          for (let l = lines.next(); l !== null; l = lines.next()) got.push(l);
          from = to;
        }
        const want = expected(bytes);
        expect(got).toEqual(want.lines);
        expect(lines.size).toBe(Buffer.byteLength(want.rest));
        expect(lines.rest()).toBe(want.rest);
      }),
      { numRuns: 60 },
    );
  }, 120_000); // up to ~240 KB a case: ~8 s alone, 18 s at load 7

  it('linesOf: the lines of a stream, the last one also without a newline', async () => {
    await fc.assert(
      fc.asyncProperty(cuts, async ({ bytes, chunks }) => {
        const got: string[] = [];
        for await (const line of linesOf(Readable.from(chunks))) got.push(line);
        const want = expected(bytes);
        expect(got).toEqual(want.rest === '' ? want.lines : [...want.lines, want.rest]);
      }),
      { numRuns: 300 },
    );
  });

  it('splits a JSON line at LF only (not at U+2028, U+2029 or a lone CR)', () => {
    const lines = new Lines();
    const record = JSON.stringify({ text: 'a\u2028b\u2029c\rd' });
    lines.append(Buffer.from(`${record}\r\n${record}\n`));
    expect([lines.next(), lines.next(), lines.next()]).toEqual([record, record, null]);
  });
});
