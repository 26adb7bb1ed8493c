/**
 * Lines of bytes split at LF only, as the MCP SDK's stdio ReadBuffer splits them: each line's bytes decoded as
 * UTF-8, a trailing CR dropped. node:readline also splits at a lone CR and, from Node 24, at U+2028 and U+2029,
 * which JSON.stringify leaves unescaped in strings: a JSON line holding one came out in pieces. The one line
 * splitter of the stdio gateway (both sides of its fast path), the JSONL audit file's reader and the tests' JSON
 * lines.
 */

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
   * many chunks costs its bytes, not a copy of what came before per chunk).
   */
  #pieces: Buffer[] | undefined;
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
      (this.#pieces ??= []).push(buffer);
      this.#buffer = chunk;
    }
  }

  /** The next whole line, or null until a newline comes. */
  next(): string | null {
    const buffer = this.#buffer;
    const index = buffer ? buffer.indexOf(10) : -1;
    if (!buffer || index === -1) return null;
    let line = buffer;
    let end = index;
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
    const pieces = this.#pieces ?? [];
    if (this.#buffer !== undefined) pieces.push(this.#buffer);
    this.clear();
    return Buffer.concat(pieces).toString('utf8');
  }

  clear(): void {
    this.#buffer = undefined;
    this.#pieces = undefined;
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
