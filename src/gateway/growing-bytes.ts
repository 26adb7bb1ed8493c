/**
 * Bytes that come in chunks, held in one buffer whose capacity doubles as it fills (never past a bound): an
 * answer sent in one-byte chunks holds about its bytes, not an object per chunk. A single chunk is held as it
 * came (no copy: the common answer in one read).
 */
export class GrowingBytes {
  readonly #bound: number;
  #buffer: Buffer | undefined;
  /** Whether {@link #buffer} is a chunk as it came (not ours to write into). */
  #borrowed = false;
  #size = 0;

  /** `bound`: the most bytes ever held (the caller refuses more before {@link push}). */
  constructor(bound: number) {
    this.#bound = bound;
  }

  get size(): number {
    return this.#size;
  }

  /** Appends a chunk (the size after it at most the bound). */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    const size = this.#size + chunk.length;
    let buffer = this.#buffer;
    if (buffer === undefined) {
      this.#buffer = chunk;
      this.#borrowed = true;
      this.#size = size;
      return;
    }
    if (this.#borrowed || buffer.length < size) {
      // Not from Node's shared pool: a held slice of it would keep its whole slab.
      const capacity = Math.min(Math.max(size, 2 * this.#size, 4096), Math.max(this.#bound, size));
      const grown = Buffer.allocUnsafeSlow(capacity);
      buffer.copy(grown, 0, 0, this.#size);
      this.#buffer = buffer = grown;
      this.#borrowed = false;
    }
    chunk.copy(buffer, this.#size);
    this.#size = size;
  }

  /** The bytes held (a view of the buffer: read it before the next push). */
  bytes(): Buffer {
    return this.#buffer === undefined ? Buffer.alloc(0) : this.#buffer.subarray(0, this.#size);
  }
}
