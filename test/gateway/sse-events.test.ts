/**
 * SseEvents (upstream-sse.ts) reads an SSE stream cut anywhere as its earlier reader did (which re-copied the held
 * line on every chunk, atk-own-http-sse-byte-chunks.test.ts): the same events, last id, retry and held size, on
 * random streams (CR, LF, CRLF line ends, BOMs, multi-byte characters, comments, fields) cut at random bytes.
 */
import fc from 'fast-check';
import { StringDecoder } from 'node:string_decoder';
import { describe, expect, it } from 'vitest';
import { SseEvents } from '../../src/gateway/upstream-sse.js';

/** upstream-sse.ts's SseEvents before its push stopped re-copying the held line (the reference). */
class OldSseEvents {
  readonly #each: (data: string) => void;
  readonly #decoder = new StringDecoder('utf8');
  #text = '';
  #data: string[] = [];
  #dataSize = 0;
  #event = '';
  #id: string | undefined;
  #begun = false;
  /** The id of the last event that named one (a resumable stream). */
  lastId: string | undefined;
  /** The reconnection delay the stream asked for (`retry:`), ms. */
  retry: number | undefined;

  constructor(each: (data: string) => void) {
    this.#each = each;
  }

  /** What is held now (the unfinished line and the data of the unfinished event), in characters. */
  get held(): number {
    return this.#text.length + this.#dataSize;
  }

  push(chunk: Buffer): void {
    // The held text has no line end in it (but perhaps a last CR): the search starts where it ended.
    const from = Math.max(0, this.#text.length - 1);
    let text = this.#text + this.#decoder.write(chunk);
    // A BOM opening the stream is dropped, as the SDK's TextDecoderStream drops it.
    if (!this.#begun && text !== '') {
      this.#begun = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let start = 0;
    for (;;) {
      let end = start === 0 ? Math.min(from, text.length) : start;
      while (end < text.length && text.charCodeAt(end) !== 10 && text.charCodeAt(end) !== 13) end++;
      if (end === text.length) break;
      // A CR last in the chunk may be the first half of a CRLF: wait for the next one.
      if (text.charCodeAt(end) === 13 && end + 1 === text.length) break;
      this.#line(text.slice(start, end));
      start = end + (text.charCodeAt(end) === 13 && text.charCodeAt(end + 1) === 10 ? 2 : 1);
    }
    this.#text = text.slice(start);
  }

  #line(line: string): void {
    if (line === '') {
      const data = this.#data;
      const event = this.#event;
      // As eventsource-parser: an event without data is not one (its id is no resumption point).
      if (this.#id && data.length > 0) this.lastId = this.#id;
      this.#data = [];
      this.#dataSize = 0;
      this.#event = '';
      this.#id = undefined;
      if (data.length > 0 && (event === '' || event === 'message')) {
        const joined = data.join('\n');
        if (joined !== '') this.#each(joined);
      }
      return;
    }
    if (line.charCodeAt(0) === 58) return; // a comment (keep-alive)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') {
      this.#data.push(value);
      this.#dataSize += value.length + 1;
    } else if (field === 'event') this.#event = value;
    else if (field === 'id' && !value.includes('\0'))
      this.#id = value; // as eventsource-parser: NUL, ignored
    else if (field === 'retry' && /^\d+$/.test(value)) this.retry = Number(value);
  }
}

const piece = fc.constantFrom(
  'data',
  'data:',
  'data: ',
  ' ',
  ':',
  'event',
  'message',
  'other',
  'id',
  'retry',
  '12',
  '\0',
  'x',
  'é',
  '\u{1f600}',
  '\r',
  '\n',
  '\r\n',
  '\r\n\r\n',
  '\n\n',
  '\ufeff',
);

function run(
  events: { push(chunk: Buffer): void; held: number; lastId: string | undefined; retry: number | undefined },
  got: string[],
  bytes: Buffer,
  cuts: number[],
): unknown[] {
  const trace: unknown[] = [];
  let at = 0;
  for (const cut of [...cuts.map((c) => c % (bytes.length + 1)).sort((a, b) => a - b), bytes.length]) {
    events.push(bytes.subarray(at, Math.max(at, cut)));
    at = Math.max(at, cut);
    trace.push([got.length, events.held, events.lastId, events.retry]);
  }
  return [trace, got];
}

describe('SseEvents', () => {
  it('reads a stream cut anywhere as its earlier reader did', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 60 }), fc.array(fc.nat(400), { maxLength: 30 }), (pieces, cuts) => {
        const bytes = Buffer.from(pieces.join(''));
        const a: string[] = [];
        const b: string[] = [];
        expect(run(new SseEvents((d) => a.push(d)), a, bytes, cuts)).toEqual(
          run(new OldSseEvents((d) => b.push(d)), b, bytes, cuts),
        );
      }),
      { numRuns: 3000 },
    );
  });

  it('holds a long unended line in few pieces and hands it on whole', () => {
    const got: string[] = [];
    const events = new SseEvents((d) => got.push(d));
    events.push(Buffer.from('data: '));
    for (let i = 0; i < 100_000; i++) events.push(Buffer.from('ab'));
    expect(events.held).toBe(200_006);
    events.push(Buffer.from('\r'));
    events.push(Buffer.from('\n\n'));
    expect(got).toEqual(['ab'.repeat(100_000)]);
    expect(events.held).toBe(0);
  });
});
