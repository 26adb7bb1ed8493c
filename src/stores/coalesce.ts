/**
 * The concurrent `consume` calls of one process, coalesced (the Redis and PostgreSQL counter stores): a call
 * made while none is in flight is sent at once (no added latency for a lone caller); the calls made while one
 * is in flight wait for it and go together in the next, which the server decides in the order they were made,
 * each all or nothing. So N concurrent decisions cost one round trip and one server step, not N, and the totals
 * stay exact. Internal: not exported from an entry point.
 */
import type { CounterCharge, CounterVerdict } from './types.js';

/** Decides `sets` in one server step, in order; answers one verdict per set (or rejects for all of them). */
export type SendSets = (sets: readonly (readonly CounterCharge[])[]) => Promise<readonly CounterVerdict[]>;

interface Queued {
  readonly charges: readonly CounterCharge[];
  readonly resolve: (verdict: CounterVerdict) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * One in-flight server step at a time; what arrives meanwhile goes in the next (at most `maxSets` a step). One
 * send path: every call joins the queue, and a call that finds no step in flight sends the queue at once (for a
 * lone caller, a step of one set with no wait).
 */
export class CoalescedConsume {
  readonly #send: SendSets;
  readonly #maxSets: number;
  #queued: Queued[] = [];
  #sending = false;

  constructor(send: SendSets, maxSets = 256) {
    this.#send = send;
    this.#maxSets = maxSets;
  }

  push(charges: readonly CounterCharge[]): Promise<CounterVerdict> {
    return new Promise<CounterVerdict>((resolve, reject) => {
      this.#queued.push({ charges, resolve, reject });
      if (!this.#sending) this.#step();
    });
  }

  /** Sends the queue (its first `maxSets`); when that step settles, the next, until none is queued. */
  #step(): void {
    const queued = this.#queued;
    if (queued.length === 0) {
      this.#sending = false;
      return;
    }
    this.#sending = true;
    const batch = queued.length <= this.#maxSets ? queued : queued.slice(0, this.#maxSets);
    this.#queued = batch === queued ? [] : queued.slice(this.#maxSets);
    let sent: Promise<readonly CounterVerdict[]>;
    try {
      sent = this.#send(batch.length === 1 ? [batch[0]!.charges] : batch.map((q) => q.charges));
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      (verdicts) => {
        // Anything but a list of one verdict per set rejects the step's calls (a throw here would leave them,
        // and every call queued after them, unsettled for good).
        let count: number;
        try {
          count = Array.isArray(verdicts) ? verdicts.length : -1;
        } catch {
          count = -1;
        }
        if (count !== batch.length) {
          const error = answered(count, batch.length);
          for (const q of batch) q.reject(error);
        } else for (let i = 0; i < batch.length; i++) batch[i]!.resolve(verdicts[i]!);
        this.#step();
      },
      (error: unknown) => {
        for (const q of batch) q.reject(error);
        this.#step();
      },
    );
  }
}

function answered(verdicts: number, sets: number): Error {
  const what = verdicts < 0 ? 'no list of verdicts' : `${verdicts} verdicts`;
  return new Error(`the counter store answered ${what} for ${sets} charge sets`);
}
