/**
 * A tiny typed emitter over a closed event map (no dependency). A listener that throws is reported as a
 * process warning and does not stop other listeners or the dispatch.
 */
export class Emitter<Event extends { readonly type: string }> {
  readonly #listeners = new Set<(event: Event) => void>();

  on(listener: (event: Event) => void): () => void {
    if (typeof listener !== 'function') throw new TypeError(`a listener must be a function, got ${typeof listener}`);
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  get size(): number {
    return this.#listeners.size;
  }

  emit(event: Event): void {
    if (this.#listeners.size === 0) return;
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        process.emitWarning(
          `toolgate: a listener for "${event.type}" threw: ${error instanceof Error ? error.message : String(error)}`,
          {
            code: 'TOOLGATE_LISTENER',
          },
        );
      }
    }
  }
}
