/**
 * Bytes that come in chunks, held in one buffer whose capacity doubles as it fills (never past a bound): an
 * answer sent in one-byte chunks holds about its bytes, not an object per chunk. A single chunk is held as it
 * came (no copy: the common answer in one read); a part of one ({@link GrowingBytes.pushPart}) is copied. The
 * gateway's raw answers and its HTTP client's unfinished line, and the small chunks of an unfinished line in
 * `Lines` (src/lines.ts).
 */
export class GrowingBytes {
  readonly #bound: number;
  readonly #least: number;
  #buffer: Buffer | undefined;
  /** Whether {@link #buffer} is a chunk as it came (not ours to write into). */
  #borrowed = false;
  #size = 0;

  /**
   * `bound`: the most bytes ever held (the caller refuses more before {@link push}); `least`: the first capacity
   * allocated (a reader of short lines holds less than an answer's body).
   */
  constructor(bound: number, least = 4096) {
    this.#bound = bound;
    this.#least = least;
  }

  get size(): number {
    return this.#size;
  }

  /** Appends a chunk (the size after it at most the bound). */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.#buffer === undefined) {
      this.#buffer = chunk;
      this.#borrowed = true;
      this.#size = chunk.length;
      return;
    }
    this.#append(chunk, 0, chunk.length);
  }

  /**
   * Appends a copy of `chunk[from, to)` (the size after it at most the bound): a view would keep the whole
   * chunk, and the rest of it is not ours to hold.
   */
  pushPart(chunk: Buffer, from: number, to = chunk.length): void {
    if (to > from) this.#append(chunk, from, to);
  }

  #append(chunk: Buffer, from: number, to: number): void {
    const size = this.#size + to - from;
    let buffer = this.#buffer;
    if (buffer === undefined || this.#borrowed || buffer.length < size) {
      // Not from Node's shared pool: a held slice of it would keep its whole slab.
      const capacity = Math.min(Math.max(size, 2 * this.#size, this.#least), Math.max(this.#bound, size));
      const grown = Buffer.allocUnsafeSlow(capacity);
      if (buffer !== undefined) buffer.copy(grown, 0, 0, this.#size);
      this.#buffer = buffer = grown;
      this.#borrowed = false;
    }
    chunk.copy(buffer, this.#size, from, to);
    this.#size = size;
  }

  /** The bytes held (a view of the buffer: read it before the next push). */
  bytes(): Buffer {
    return this.#buffer === undefined ? Buffer.alloc(0) : this.#buffer.subarray(0, this.#size);
  }
}
