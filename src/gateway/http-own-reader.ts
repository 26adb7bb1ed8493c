/**
 * A strict reader of one HTTP/1.1 response on a keep-alive connection, for the gateway's own client of its raw
 * POSTs (http-own-client.ts, issue 25.3). Read as Node's parser (llhttp) reads a well-formed response — the same
 * status, reason, raw headers (values without their surrounding whitespace) and body bytes, proven by
 * test/gateway/http-own-reader.test.ts on random responses cut anywhere — but stricter where a response is not
 * well-formed: it fails on a bare LF or CR, a folded header line, a header name that is not a token or a value with
 * a control character, a Content-Length that is not digits or comes twice, a Transfer-Encoding other than exactly
 * one `chunked` (any case), both Content-Length and Transfer-Encoding, a chunk size of more than 13 hex digits
 * (leading zeros aside) or a chunk extension with whitespace, a version other than HTTP/1.0 and HTTP/1.1,
 * `101 Switching Protocols` (never asked), and a 1xx that closes its connection (`Connection: close`, HTTP/1.0).
 * Every other 1xx (100 Continue asked or not, 103 Early Hints, …) is skipped before the final response, as
 * RFC 9110 asks of a client. A head (and a chunked body's trailers) over
 * {@link MAX_HEAD} bytes fails, as Node's 16 KiB header bound does.
 */
import { GrowingBytes } from '../growing-bytes.js';

/** The largest response head (or trailer section) read: Node's default `--max-http-header-size`. */
export const MAX_HEAD = 16 * 1024;

/** The end of a head: its last line's CRLF and the blank line. */
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');

/** The longest chunk-size line (size and extensions) read. */
const MAX_CHUNK_LINE = 4 * 1024;

/** The first capacity of an unfinished line's buffer (most lines of a head are shorter). */
const HELD_LEAST = 256;

/** What a reader hands on: the final head, the body's bytes as they come, its end, or why it cannot be read. */
export interface ResponseSink {
  head(status: number, reason: string, rawHeaders: string[]): void;
  body(chunk: Buffer): void;
  end(): void;
  fail(error: Error): void;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const STATUS = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: ([\t\x20-\x7e\x80-\xff]*))?$/;
const CHUNK_EXT =
  /^(?:;[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:=(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+|"[\t\x20\x21\x23-\x5b\x5d-\x7e]*"))?)*$/;

/** Where the reader is in a response. */
const State = {
  Head: 0,
  Length: 1,
  ChunkSize: 2,
  ChunkData: 3,
  ChunkEnd: 4,
  Trailers: 5,
  UntilClose: 6,
  Done: 7,
  Failed: 8,
} as const;
type State = (typeof State)[keyof typeof State];

/** A response's framing error (the call fails with it: its outcome is unknown). */
export class ResponseFramingError extends Error {
  constructor(what: string) {
    super(`the upstream's answer is not well-formed HTTP/1.1 (${what}): the call's outcome is unknown`);
  }
}

/** Reads one response, fed the connection's bytes as they come ({@link push}) and its end ({@link eof}). */
export class ResponseReader {
  readonly #sink: ResponseSink;
  #state: State = State.Head;
  /**
   * Bytes of an unfinished line (head, chunk size, trailers) held from earlier chunks, within the line's bound: a
   * line trickled a byte per read holds about its bytes.
   */
  #held: GrowingBytes | undefined;
  /** Bytes of the head (or trailers) read so far. */
  #headSize = 0;
  #lines: string[] = [];
  /** Body bytes left: of the Content-Length, or of the chunk. */
  #left = 0;
  /** After the end: whether the connection may carry another request. */
  keepAlive = false;
  /** Bytes came after the response's end (the connection is not reused). */
  extra = false;

  constructor(sink: ResponseSink) {
    this.#sink = sink;
  }

  get done(): boolean {
    return this.#state === State.Done;
  }

  /** Whether the response's end is its connection's close (no Content-Length, not chunked). */
  get untilClose(): boolean {
    return this.#state === State.UntilClose;
  }

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      switch (this.#state) {
        case State.Head:
          // A whole head in this chunk (the common case) is read at once; else, and whenever it would not read
          // as its lines one by one do, line by line.
          at = this.#held === undefined && this.#lines.length === 0 ? this.#wholeHead(chunk, at) : at;
          if (at < chunk.length && this.#state === State.Head) at = this.#lineBytes(chunk, at);
          break;
        case State.ChunkEnd:
          // The CRLF after a chunk's data, whole in this chunk: nothing to hold or convert.
          if (this.#held === undefined && chunk[at] === 13 && chunk[at + 1] === 10) {
            this.#state = State.ChunkSize;
            at += 2;
            break;
          }
          at = this.#lineBytes(chunk, at);
          break;
        case State.Trailers:
        case State.ChunkSize:
          at = this.#lineBytes(chunk, at);
          break;
        case State.Length:
        case State.ChunkData: {
          const n = Math.min(this.#left, chunk.length - at);
          this.#left -= n;
          const piece = at === 0 && n === chunk.length ? chunk : chunk.subarray(at, at + n);
          at += n;
          if (this.#left === 0) this.#state = this.#state === State.Length ? State.Done : State.ChunkEnd;
          this.#sink.body(piece);
          if (this.#state === State.Done) this.#finish();
          break;
        }
        case State.UntilClose:
          this.#sink.body(at === 0 ? chunk : chunk.subarray(at));
          return;
        case State.Done:
          this.extra = true;
          this.keepAlive = false;
          return;
        case State.Failed:
          return;
      }
    }
  }

  /** The response is no longer read (its connection was closed): nothing more is handed on. */
  stop(): void {
    this.#state = State.Failed;
    this.keepAlive = false;
    this.#held = undefined;
  }

  /** The connection ended: the end of a body read until close, an error anywhere else. */
  eof(): void {
    if (this.#state === State.UntilClose) {
      this.#state = State.Done;
      this.keepAlive = false;
      this.#sink.end();
    } else if (this.#state !== State.Done && this.#state !== State.Failed)
      this.#failed('the upstream closed the connection mid-answer', false);
  }

  /**
   * Reads the head that starts at `at` when all of it (its blank line too) is in `chunk`, within {@link MAX_HEAD},
   * and every line of it ends in CRLF with no other CR or LF: converted once and read line by line as
   * {@link #lineBytes} reads each (the same sizes counted, the same lines in the same order); returns where it
   * stopped — `at` when it read nothing (the head is then read line by line, failing where it fails).
   */
  #wholeHead(chunk: Buffer, at: number): number {
    const blank = chunk.indexOf(HEAD_END, at);
    if (blank === -1 || this.#headSize + blank + 4 - at > MAX_HEAD) return at;
    const lines = chunk.toString('latin1', at, blank).split('\r\n');
    for (const line of lines) if (line.includes('\r') || line.includes('\n')) return at;
    for (const line of lines) {
      this.#headSize += line.length + 2;
      this.#line(line);
      if (this.#state === State.Failed) return chunk.length;
    }
    this.#headSize += 2;
    this.#line('');
    return this.#state === State.Failed ? chunk.length : blank + 4;
  }

  /** Reads up to the next line end from `at`; returns where it stopped. */
  #lineBytes(chunk: Buffer, at: number): number {
    const lf = chunk.indexOf(10, at);
    const end = lf === -1 ? chunk.length : lf + 1;
    const held = this.#held;
    const size = (held?.size ?? 0) + end - at;
    const bound = this.#state === State.ChunkSize || this.#state === State.ChunkEnd ? MAX_CHUNK_LINE : MAX_HEAD;
    if (this.#headSize + size > bound) {
      this.#failed(this.#state === State.ChunkSize ? 'a chunk-size line too long' : `a head over ${MAX_HEAD} bytes`);
      return chunk.length;
    }
    if (lf === -1) {
      // The bound checked above: the size stays within it.
      (this.#held ??= new GrowingBytes(bound, HELD_LEAST)).pushPart(chunk, at);
      return chunk.length;
    }
    let bytes = chunk.subarray(at, end);
    if (held !== undefined) {
      held.pushPart(chunk, at, end);
      bytes = held.bytes();
      this.#held = undefined;
    }
    if (bytes.length < 2 || bytes[bytes.length - 2] !== 13) {
      this.#failed('a bare LF');
      return chunk.length;
    }
    const line = bytes.toString('latin1', 0, bytes.length - 2);
    if (line.includes('\r')) {
      this.#failed('a bare CR');
      return chunk.length;
    }
    if (this.#state === State.Head || this.#state === State.Trailers) this.#headSize += bytes.length;
    this.#line(line);
    return this.#state === State.Failed ? chunk.length : end;
  }

  #line(line: string): void {
    switch (this.#state) {
      case State.ChunkEnd:
        if (line !== '') return this.#failed('chunk data longer than its size');
        this.#state = State.ChunkSize;
        return;
      case State.ChunkSize:
        return this.#chunkSize(line);
      case State.Trailers:
        // A trailer is read as a header is (and then dropped: nothing of an answer is taken from one).
        if (line !== '') return void this.#field(line);
        this.#headSize = 0;
        this.#state = State.Done;
        return this.#finish();
      default:
        if (line !== '') {
          const first = line.charCodeAt(0);
          if (this.#lines.length > 0 && (first === 32 || first === 9)) return this.#failed('a folded header line');
          this.#lines.push(line);
          return;
        }
        if (this.#lines.length === 0) return this.#failed('an empty status line');
        return this.#head();
    }
  }

  /** A header or trailer line as [name, value] (the value without surrounding whitespace); undefined: failed. */
  #field(line: string): [string, string] | undefined {
    const colon = line.indexOf(':');
    const name = colon === -1 ? '' : line.slice(0, colon);
    if (!TOKEN.test(name)) return void this.#failed('a header name that is not a token');
    let from = colon + 1;
    let to = line.length;
    while (from < to && (line.charCodeAt(from) === 32 || line.charCodeAt(from) === 9)) from++;
    while (to > from && (line.charCodeAt(to - 1) === 32 || line.charCodeAt(to - 1) === 9)) to--;
    const value = line.slice(from, to);
    if (!VALUE.test(value)) return void this.#failed('a control character in a header value');
    return [name, value];
  }

  #head(): void {
    const lines = this.#lines;
    this.#lines = [];
    this.#headSize = 0;
    const status = STATUS.exec(lines[0]!);
    if (status === null) return this.#failed('a status line that is not HTTP/1.x NNN');
    const code = Number(status[2]);
    const raw: string[] = [];
    let length: number | undefined;
    let chunked = false;
    let close = status[1] === '0';
    for (let i = 1; i < lines.length; i++) {
      const field = this.#field(lines[i]!);
      if (field === undefined) return;
      const [name, value] = field;
      raw.push(name, value);
      const lower = name.length === 14 || name.length === 17 || name.length === 10 ? name.toLowerCase() : '';
      if (lower === 'content-length') {
        if (length !== undefined || !/^\d{1,15}$/.test(value)) return this.#failed('a duplicate or bad Content-Length');
        length = Number(value);
      } else if (lower === 'transfer-encoding') {
        if (chunked || value.toLowerCase() !== 'chunked') return this.#failed('a Transfer-Encoding other than chunked');
        chunked = true;
      } else if (lower === 'connection') {
        if (value.split(',').some((token) => token.trim().toLowerCase() === 'close')) close = true;
      }
    }
    if (chunked && length !== undefined) return this.#failed('both Content-Length and Transfer-Encoding');
    if (code < 200) {
      // An interim answer: skipped (RFC 9110 §15.2: a client accepts one it did not ask for); 101 never asked.
      if (code === 101) return this.#failed('101 Switching Protocols, never asked');
      // As Node: an interim answer closing its connection (or of HTTP/1.0) has no final answer after it.
      if (close) return this.#failed('an interim answer that closes its connection');
      return;
    }
    this.keepAlive = !close;
    if (code === 204 || code === 304) this.#state = State.Done;
    else if (chunked) this.#state = State.ChunkSize;
    else if (length !== undefined) this.#state = length === 0 ? State.Done : State.Length;
    else {
      this.#state = State.UntilClose;
      this.keepAlive = false;
    }
    this.#left = length ?? 0;
    this.#sink.head(code, status[3] ?? '', raw);
    if (this.#state === State.Done) this.#finish();
  }

  #chunkSize(line: string): void {
    let digits = 0;
    while (digits < line.length && isHex(line.charCodeAt(digits))) digits++;
    const ext = line.slice(digits);
    if (digits === 0 || !CHUNK_EXT.test(ext)) return this.#failed('a bad chunk size');
    const hex = line.slice(0, digits).replace(/^0+(?=.)/, '');
    if (hex.length > 13) return this.#failed('a chunk size over 13 hex digits');
    const size = parseInt(hex, 16);
    if (size === 0) {
      this.#state = State.Trailers;
      this.#headSize = 0;
      return;
    }
    this.#left = size;
    this.#state = State.ChunkData;
  }

  #finish(): void {
    if (this.#state !== State.Done) return;
    this.#sink.end();
  }

  #failed(what: string, framing = true): void {
    if (this.#state === State.Failed || this.#state === State.Done) return;
    this.#state = State.Failed;
    this.keepAlive = false;
    this.#held = undefined;
    this.#sink.fail(framing ? new ResponseFramingError(what) : new Error(what));
  }
}

function isHex(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}
