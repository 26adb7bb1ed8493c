/**
 * A tiny typed emitter over a closed event map (no dependency). A listener that throws is reported as a
 * process warning and does not stop other listeners or the dispatch.
 *
 * Every listener gets the same event object, so it is frozen (with its plain-object and array fields)
 * once, before the first listener runs: an earlier listener cannot change what a later one (an audit
 * sink) reads — a refused call recorded as allowed was the bug this prevents (issue 22).
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
    freezeEvent(event);
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

/**
 * Freezes an event (or an audit record) handed to several listeners or sinks: the object, and each of its
 * fields that is a plain object or an array, to the depth of `depth` (2: `event.decision.asked`). Class
 * instances (a PermissionPolicy in `policy_changed`) are left alone: they are their owner's objects, and
 * their fields are readonly already. Already-frozen values are skipped, so a Decision (frozen where it is
 * built) costs one check.
 */
export function freezeEvent<T extends object>(event: T, depth = 2): T {
  if (Object.isFrozen(event)) return event;
  Object.freeze(event);
  if (depth === 0) return event;
  for (const key in event) {
    const value: unknown = event[key];
    if (typeof value !== 'object' || value === null || Object.isFrozen(value)) continue;
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto === Object.prototype || proto === null || Array.isArray(value)) freezeEvent(value, depth - 1);
  }
  return event;
}
