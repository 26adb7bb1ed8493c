// Issue 25.3 (f4e0cbc): readJson takes a POST body already held whole (the request complete, or all its
// Content-Length held) at once with read(). Attack: several 2026-07-28 POSTs pipelined on one keep-alive
// connection, their bytes cut anywhere (two requests and a half in one packet, a body's multi-byte UTF-8
// character split across packets, a head alone, a body alone, a body past the request's 16 KiB buffer mark),
// on a real gateway over HTTP in front of the real 2026-07-28 fixture. Held: every request is answered, in order, each with its own id and its own text —
// never another's body, a body cut short or run on into the next request. Fails with readJson's test of a body
// held whole dropped to `req.complete || length !== 0` (a body taken before all of it came: a 400), and with the
// event path's pieces decoded one by one (a character split across packets read as U+FFFD, a 200 with another
// text), which test/gateway/http-read-json.test.ts does not see.
import { connect } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach, fastPathFor, gatewayOverHttp, rawModernCall } from '../harness.js';
import { modernUpstreamPolicy } from '../gateway/fixtures/modern-fast.js';

const cleanups = cleanupsAfterEach();

const post = (url: URL, id: number, text: string): Buffer => rawModernCall(url, 'mod:echo', id, { text });

/** The answers read off `bytes` (each framed by its Content-Length, as the fast path frames them). */
function answers(bytes: Buffer): { status: number; body: string }[] {
  const out: { status: number; body: string }[] = [];
  let at = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', at, 'latin1');
    if (end === -1) return out;
    const head = bytes.toString('latin1', at, end);
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (length === null) throw new Error(`an answer not framed by its length:\n${head}`);
    const start = end + 4;
    const stop = start + Number(length[1]);
    if (stop > bytes.length) return out;
    out.push({ status: Number(head.slice(9, 12)), body: bytes.toString('utf8', start, stop) });
    at = stop;
  }
}

/** Writes `pieces` one after another on one connection; resolves with all it read once `count` answers came. */
function exchange(url: URL, pieces: readonly Buffer[], count: number): Promise<{ status: number; body: string }[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const read: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => {
      read.push(chunk);
      const got = answers(Buffer.concat(read));
      if (got.length >= count) {
        socket.destroy();
        resolve(got);
      }
    });
    socket.once('error', reject);
    socket.once('close', () => resolve(answers(Buffer.concat(read))));
    socket.once('connect', () => {
      let i = 0;
      const next = (): void => {
        if (i === pieces.length) return;
        // Each piece its own write, the next after the event loop turned (its own packet, as often as not).
        socket.write(pieces[i++]!, () => setImmediate(next));
      };
      next();
    });
  });
}

const TEXTS = ['a', 'é', '€uro', '𝄞 clef', 'x'.repeat(3000), 'ü'.repeat(700), '"quoted" \\ back', 'ß'.repeat(30_000)];

describe('pipelined 2026-07-28 POSTs on one connection, cut anywhere', { timeout: 60_000 }, () => {
  it('answers each in order with its own id and text', async () => {
    const { policy } = await modernUpstreamPolicy(cleanups, 'atk-gw25-pipelined', {
      name: 'many',
      tool: 'mod:pay',
      max: 1000,
    });
    fastPathFor(cleanups, true);
    const { url, records } = await gatewayOverHttp(cleanups, policy);
    const sent: string[] = ['warm'];
    // The modern handler (and its fast path) is made on the first 2026-07-28 request.
    expect((await exchange(url, [post(url, 1, 'warm')], 1))[0]!.status).toBe(200);
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...TEXTS.keys()), { minLength: 2, maxLength: 4 }),
        fc.array(fc.nat(200_000), { maxLength: 5 }),
        async (texts, cuts) => {
          const base = ++round * 10;
          const wire = Buffer.concat(texts.map((t, i) => post(url, base + i, `${TEXTS[t]!}-${base + i}`)));
          sent.push(...texts.map((t, i) => `${TEXTS[t]!}-${base + i}`));
          const at = [...new Set(cuts.map((c) => c % wire.length))].sort((a, b) => a - b);
          const pieces = [0, ...at].map((from, i) => wire.subarray(from, [...at, wire.length][i]));
          const got = await exchange(
            url,
            pieces.filter((p) => p.length > 0),
            texts.length,
          );
          expect(got.length).toBe(texts.length);
          for (const [i, answer] of got.entries()) {
            expect(answer.status, answer.body).toBe(200);
            const parsed = JSON.parse(answer.body) as { id: number; result: { content: { text: string }[] } };
            expect(parsed.id).toBe(base + i);
            expect(parsed.result.content[0]!.text).toBe(`echo: ${TEXTS[texts[i]!]!}-${base + i}`);
          }
        },
      ),
      { seed: 2025, numRuns: 25 },
    );
    // Each call audited once, with its own arguments (recorded before its answer was written).
    const audited = records
      .filter((r) => r.type === 'tool')
      .map((r) => (r.type === 'tool' ? r.decision?.parameters?.['text'] : undefined));
    expect(audited.sort()).toEqual(sent.sort());
  });
});
