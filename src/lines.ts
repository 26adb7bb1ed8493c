/**
 * Lines of bytes split at LF only, as the MCP SDK's stdio ReadBuffer splits them: each line's bytes decoded as
 * UTF-8, a trailing CR dropped. node:readline also splits at a lone CR and, from Node 24, at U+2028 and U+2029,
 * which JSON.stringify leaves unescaped in strings: a JSON line holding one came out in pieces. The one line
 * splitter of the stdio gateway (both sides of its fast path), the JSONL audit file's reader and the tests' JSON
 * lines.
 */
import { GrowingBytes } from './growing-bytes.js';

/**
 * A chunk of an unfinished line shorter than this is copied into a buffer with the small chunks next to it (a
 * Buffer kept costs ~200 bytes of heap besides its bytes); a longer one is kept as it came.
 */
const SMALL = 1024;

/** The most a stage grows to: a full one becomes a piece, and the next small chunks start another of this size. */
const STAGE = 65_536;

/**
 * The lines of chunks of bytes as they come ({@link Lines.append}), read one at a time ({@link Lines.next}).
 *
 * @example
 * const lines = new Lines();
 * lines.append(chunk);
 * for (let line = lines.next(); line !== null; line = lines.next()) handle(line);
 */
export class Lines {
  /** The last chunk's bytes not read yet (and later chunks', joined, where whole lines were left unread). */
  #buffer: Buffer | undefined;
  /**
   * Earlier bytes of the unfinished line, none of them a newline: joined once, when its end comes (a line in
   * many chunks costs its bytes, not a copy of what came before per chunk). Chunks shorter than SMALL are copied
   * together into {@link #stage} first: a peer writing a byte at a time makes every byte a chunk of its own, and
   * a Buffer kept per chunk costs ~200 bytes of heap (10 MiB of them ~2 GB); held so, they cost at most about
   * twice their bytes.
   */
  #pieces: Buffer[] | undefined;
  /** The last piece while small chunks come, its capacity doubled as it fills, to STAGE. */
  #stage: GrowingBytes | undefined;
  #size = 0;

  /** The bytes held: an unfinished line, and whole lines not read yet. */
  get size(): number {
    return this.#size;
  }

  append(chunk: Buffer): void {
    const buffer = this.#buffer;
    this.#size += chunk.length;
    if (buffer === undefined) this.#buffer = chunk;
    else if (buffer.indexOf(10) !== -1) this.#buffer = Buffer.concat([buffer, chunk]);
    else {
      this.#hold(buffer);
      this.#buffer = chunk;
    }
  }

  /** Adds `bytes` (no newline in them) to the unfinished line's earlier bytes. */
  #hold(bytes: Buffer): void {
    if (bytes.length >= SMALL) {
      this.#unstage();
      (this.#pieces ??= []).push(bytes);
      return;
    }
    let stage = this.#stage;
    let least = 256;
    if (stage !== undefined && stage.size + bytes.length > STAGE) {
      this.#unstage();
      stage = undefined;
      least = STAGE;
    }
    (this.#stage = stage ?? new GrowingBytes(STAGE, least)).pushPart(bytes, 0);
  }

  /** The stage's bytes made a piece (its buffer is not written again: the next small chunks start another). */
  #unstage(): void {
    if (this.#stage === undefined) return;
    (this.#pieces ??= []).push(this.#stage.bytes());
    this.#stage = undefined;
  }

  /** The next whole line, or null until a newline comes. */
  next(): string | null {
    const buffer = this.#buffer;
    const index = buffer ? buffer.indexOf(10) : -1;
    if (!buffer || index === -1) return null;
    let line = buffer;
    let end = index;
    this.#unstage();
    const pieces = this.#pieces;
    if (pieces !== undefined) {
      pieces.push(buffer.subarray(0, index));
      line = Buffer.concat(pieces);
      end = line.length;
      this.#pieces = undefined;
    }
    this.#buffer = index + 1 < buffer.length ? buffer.subarray(index + 1) : undefined;
    this.#size = this.#buffer?.length ?? 0;
    // A trailing `\r` dropped (the SDK's `replace(/\r$/, '')`, without a regular expression per line).
    return line.toString('utf8', 0, end > 0 && line[end - 1] === 13 ? end - 1 : end);
  }

  /** What is held after the last newline, as it is (a last line without one), and nothing held after. */
  rest(): string {
    this.#unstage();
    const pieces = this.#pieces ?? [];
    if (this.#buffer !== undefined) pieces.push(this.#buffer);
    this.clear();
    return Buffer.concat(pieces).toString('utf8');
  }

  clear(): void {
    this.#buffer = undefined;
    this.#pieces = undefined;
    this.#stage = undefined;
    this.#size = 0;
  }
}

/** The lines of a stream of bytes (a string chunk is taken as UTF-8), the last one also without a newline. */
export async function* linesOf(input: AsyncIterable<Buffer | string>): AsyncGenerator<string> {
  const lines = new Lines();
  for await (const chunk of input) {
    lines.append(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
    for (let line = lines.next(); line !== null; line = lines.next()) yield line;
  }
  const rest = lines.rest();
  if (rest !== '') yield rest;
}
