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

/** One in-flight server step at a time; what arrives meanwhile goes in the next (at most `maxSets` a step). */
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
    if (this.#sending)
      return new Promise<CounterVerdict>((resolve, reject) => {
        this.#queued.push({ charges, resolve, reject });
      });
    // A lone call (none in flight): its own step, with no queue entry and no promise of ours around it.
    this.#sending = true;
    let sent: Promise<readonly CounterVerdict[]>;
    try {
      sent = this.#send([charges]);
    } catch (error) {
      sent = Promise.reject(error);
    }
    return sent.then(
      (verdicts) => {
        this.#next();
        if (verdicts.length !== 1) throw answered(verdicts.length, 1);
        return verdicts[0]!;
      },
      (error: unknown) => {
        this.#next();
        throw error;
      },
    );
  }

  /** After a step: the calls made meanwhile go in the next one (or none is in flight any more). */
  #next(): void {
    if (this.#queued.length > 0) void this.#drain();
    else this.#sending = false;
  }

  async #drain(): Promise<void> {
    while (this.#queued.length > 0) {
      const batch = this.#queued.length <= this.#maxSets ? this.#queued : this.#queued.slice(0, this.#maxSets);
      this.#queued = batch === this.#queued ? [] : this.#queued.slice(this.#maxSets);
      let verdicts: readonly CounterVerdict[];
      try {
        verdicts = await this.#send(batch.map((q) => q.charges));
        if (verdicts.length !== batch.length) throw answered(verdicts.length, batch.length);
      } catch (error) {
        for (const q of batch) q.reject(error);
        continue;
      }
      for (const [i, q] of batch.entries()) q.resolve(verdicts[i]!);
    }
    this.#sending = false;
  }
}

function answered(verdicts: number, sets: number): Error {
  return new Error(`the counter store answered ${verdicts} verdicts for ${sets} charge sets`);
}
