/**
 * The readers of the gateway's raw requests to a Streamable HTTP upstream (upstream-raw-http.ts): an answer's
 * Content-Type and text as the SDK's transport reads them, and its SSE stream.
 */
import { StringDecoder } from 'node:string_decoder';
import { mediaTypeEssence } from '@modelcontextprotocol/sdk/shared/mediaType.js';

/**
 * The events of an SSE stream as the SDK's `EventSourceParserStream` reads them (the WHATWG rules: lines end
 * in CRLF, LF or CR; `data:` lines joined by newlines; one optional space after the colon; comments and
 * `id`/`retry` skipped): each `message` event's data (an event of another name, or without data, is
 * skipped, as the SDK's transport skips it); an event the stream ends in the middle of is dropped. The last
 * event id and `retry` are kept (a stream closed before its answer is resumed from there).
 */
export class SseEvents {
  readonly #each: (data: string) => void;
  readonly #decoder = new StringDecoder('utf8');
  /** The unfinished line, in pieces (joined once, at its end: never re-copied per chunk). */
  #parts: string[] = [];
  /** How many of {@link #parts} (from the first) are already joins of many small pieces. */
  #joined = 0;
  #partsSize = 0;
  /** The unfinished line ended in a CR (perhaps the first half of a CRLF): it ends with the next character. */
  #cr = false;
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
    return this.#partsSize + (this.#cr ? 1 : 0) + this.#dataSize;
  }

  push(chunk: Buffer): void {
    let text = this.#decoder.write(chunk);
    if (text === '') return;
    // A BOM opening the stream is dropped, as the SDK's TextDecoderStream drops it.
    if (!this.#begun) {
      this.#begun = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let start = 0;
    if (this.#cr) {
      // The held line ended in a CR: it ends there (a LF right after it is the second half of a CRLF).
      this.#cr = false;
      if (text.charCodeAt(0) === 10) start = 1;
      this.#line(this.#take(''));
    }
    // Only the new text is searched for a line end (the held pieces have none), the next LF and the next CR
    // each found again only once passed: linear in what comes.
    let lf = -2;
    let cr = -2;
    for (;;) {
      if (lf !== -1 && lf < start) lf = text.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = text.indexOf('\r', start);
      const end = lf === -1 ? cr : cr === -1 || lf < cr ? lf : cr;
      if (end === -1) break;
      if (text.charCodeAt(end) === 13 && end + 1 === text.length) {
        // A CR last in the chunk may be the first half of a CRLF: the line ends with the next character.
        this.#hold(text.slice(start, end));
        this.#cr = true;
        return;
      }
      this.#line(this.#take(text.slice(start, end)));
      start = end + (text.charCodeAt(end) === 13 && text.charCodeAt(end + 1) === 10 ? 2 : 1);
    }
    this.#hold(text.slice(start));
  }

  /** Holds a piece of the unfinished line (every 256 small pieces joined into one: the array stays short). */
  #hold(piece: string): void {
    if (piece === '') return;
    this.#parts.push(piece);
    this.#partsSize += piece.length;
    if (this.#parts.length - this.#joined >= 256) {
      const tail = this.#parts.splice(this.#joined).join('');
      this.#parts.push(tail);
      this.#joined++;
    }
  }

  /** The held line's pieces and `last` joined (the line ends): nothing is held after. */
  #take(last: string): string {
    if (this.#parts.length === 0) return last;
    this.#parts.push(last);
    const line = this.#parts.join('');
    this.#parts = [];
    this.#joined = 0;
    this.#partsSize = 0;
    return line;
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

/** The last Content-Type read and its essence (an upstream answers with the same one every time). */
let lastType: string | undefined;
let lastEssence: string | undefined;

/** `mediaTypeEssence` (a pure function of the header), remembered for the last header read. */
export function essenceOf(contentType: string | undefined): string | undefined {
  if (contentType !== lastType || contentType === undefined) {
    lastEssence = mediaTypeEssence(contentType);
    lastType = contentType;
  }
  return lastEssence;
}

/** An answer's Content-Type as the web Headers give it: several joined (Node's `headers` keeps the first). */
export function contentTypeOf(res: { readonly rawHeaders: readonly string[] }): string | undefined {
  const raw = res.rawHeaders;
  let found: string | undefined;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.length === 12 && raw[i]!.toLowerCase() === 'content-type')
      found = found === undefined ? raw[i + 1]! : `${found}, ${raw[i + 1]!}`;
  return found;
}

/** UTF-8 text, a BOM dropped, as the web Response's text() and json() read it (the SDK transport's reads). */
export function textOf(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
