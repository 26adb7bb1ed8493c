/**
 * One timer for many deadlines of the same length (issue 25: no `setTimeout`/`clearTimeout` per request on
 * the gateway's fast path). Entries expire in the order they were added (every entry of a queue waits the
 * same time), so the queue is a Set in insertion order and its one unref'd timer is armed for the oldest;
 * an entry settled in time just leaves the set. An expired entry is removed before it is told.
 */

/** Something with a deadline: told once when it passes (unless it left its queue before). */
export interface Deadline {
  /** When it expires, `performance.now()` ms (set by {@link DeadlineQueue.add}). */
  due: number;
  expire(): void;
}

/** The deadlines of one length. */
export class DeadlineQueue {
  readonly #ms: number;
  readonly #entries = new Set<Deadline>();
  #timer: NodeJS.Timeout | undefined;

  constructor(ms: number) {
    this.#ms = ms;
  }

  /** `entry` expires in this queue's time from now. */
  add(entry: Deadline): void {
    entry.due = performance.now() + this.#ms;
    this.#entries.add(entry);
    if (this.#timer === undefined) this.#arm(this.#ms);
  }

  /** `entry` settled in time: it is not told. */
  delete(entry: Deadline): void {
    this.#entries.delete(entry);
  }

  #arm(ms: number): void {
    // Never past Node's longest delay (2^31 - 1 ms): a longer one fires after 1 ms, and again, every millisecond;
    // armed short, it fires, finds its head not due and is armed again.
    this.#timer = setTimeout(this.#due, Math.min(ms, 2 ** 31 - 1));
    this.#timer.unref();
  }

  readonly #due = (): void => {
    this.#timer = undefined;
    const now = performance.now();
    for (const entry of this.#entries) {
      if (entry.due > now) return this.#arm(Math.max(1, Math.ceil(entry.due - now)));
      this.#entries.delete(entry);
      try {
        entry.expire();
      } catch {
        // one entry's failure does not keep the others from expiring
      }
    }
  };
}

/** One queue per deadline length, made on first use. */
export class Deadlines {
  readonly #queues = new Map<number, DeadlineQueue>();

  of(ms: number): DeadlineQueue {
    let queue = this.#queues.get(ms);
    if (queue === undefined) this.#queues.set(ms, (queue = new DeadlineQueue(ms)));
    return queue;
  }
}
