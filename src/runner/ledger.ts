/**
 * The run's side of the execution ledger (`Ledger` of `toolgate/stores`): at most one execution per call key
 * across every continuation of a run and every worker. A call another worker holds is waited for, so a
 * duplicate resumer answers the model with the outcome that worker records (not with "unknown", and never
 * by asking a person again); a reservation whose lease passed unrecorded reads as unknown and is never run.
 *
 * Every row's owner is `<runner id>@<scope>`, the scope a tag of the run identity (run id, tenant, caller,
 * root agent) that the key also holds. A row read before the gate decides a call (`find`) whose owner names
 * another identity is refused (RunStateError: the run fails, nothing is answered from it): a ledger hit never
 * stands in for the gate's decision of another identity's call, whatever a store does with its keys.
 */
import type { Ledger, LedgerOutcome, LedgerReservation } from '../contracts/stores.js';
import { RunStateError } from '../errors.js';

/**
 * A call's place in the ledger (`ledgerKeyOf`, run.ts): the store key (at most one execution per key,
 * whatever continues the run) and the run identity's tag its row's owner carries.
 */
export interface CallKey {
  readonly key: string;
  readonly scope: string;
}

/** What the ledger says of a call that is not this runner's to run: its recorded outcome, or unknown. */
export type Settled = { readonly state: 'settled'; readonly outcome: LedgerOutcome } | { readonly state: 'unknown' };

const FIRST_WAIT_MS = 20;
const MAX_WAIT_MS = 500;

export class RunLedger {
  readonly #ledger: Ledger;
  readonly #owner: string;
  readonly #leaseMs: number;
  /** The last owner string made and its scope: one string per run, so a store compares it by identity. */
  #lastScope: string | null = null;
  #lastOwner = '';

  constructor(ledger: Ledger, owner: string, leaseMs: number) {
    this.#ledger = ledger;
    this.#owner = owner;
    this.#leaseMs = leaseMs;
  }

  /**
   * Before a turn is dispatched: null when the call has no row (it is decided by the gate), else how it
   * settled — waiting while another worker holds it. A row of another run identity is refused.
   */
  async find({ key, scope }: CallKey, signal: AbortSignal | undefined): Promise<Settled | null> {
    const row = await this.#ledger.inspect(key);
    if (!row) return null;
    if (typeof row.owner !== 'string' || !row.owner.endsWith(`@${scope}`))
      throw new RunStateError(
        `the ledger row ${key} was not written by this run (tenant, caller, agent and run id); it is not used, and the run stops`,
      );
    if (row.recordedAt !== null) return row.outcome ? { state: 'settled', outcome: row.outcome } : { state: 'unknown' };
    const owner = this.#ownerOf(scope);
    const found = await this.#settled(await this.#ledger.reserve(key, owner, this.#leaseMs), key, owner, signal);
    if (found !== null) return found;
    // The row was given back meanwhile (its call never started) and this runner reserved it just now: it
    // is not this runner's yet (the gate has not decided it), so it is given back too.
    await this.#ledger.release(key, owner);
    return null;
  }

  /** Before an allowed call runs: null when this runner now holds it, else how it settled (waiting while held). */
  async claim({ key, scope }: CallKey, signal: AbortSignal | undefined): Promise<Settled | null> {
    const owner = this.#ownerOf(scope);
    const first = await this.#ledger.reserve(key, owner, this.#leaseMs);
    // The common answer settles here, without a poll loop's own promise.
    if (typeof first === 'object' && first !== null && first.state === 'reserved') return null;
    return this.#settled(first, key, owner, signal);
  }

  /**
   * Records the outcome of a call. A delegation reserved by an earlier continuation of the run (another
   * worker, or a runner since restarted) and finished here is recorded under the row's own owner.
   */
  async record({ key, scope }: CallKey, outcome: LedgerOutcome): Promise<void> {
    if (await this.#ledger.record(key, this.#ownerOf(scope), outcome)) return;
    const row = await this.#ledger.inspect(key);
    if (row && row.recordedAt === null && row.owner.endsWith(`@${scope}`))
      await this.#ledger.record(key, row.owner, outcome);
  }

  /** Gives back this runner's reservation of a call that did not start. */
  release({ key, scope }: CallKey): Promise<boolean> {
    return this.#ledger.release(key, this.#ownerOf(scope));
  }

  #ownerOf(scope: string): string {
    if (scope !== this.#lastScope) {
      this.#lastOwner = `${this.#owner}@${scope}`;
      this.#lastScope = scope;
    }
    return this.#lastOwner;
  }

  /** Null for a reservation this runner won; else the settled outcome, polling while another owner holds the call. */
  async #settled(
    first: LedgerReservation,
    key: string,
    owner: string,
    signal: AbortSignal | undefined,
  ): Promise<Settled | null> {
    let r = first;
    for (let wait = FIRST_WAIT_MS; ; wait = Math.min(wait * 2, MAX_WAIT_MS)) {
      if (typeof r !== 'object' || r === null)
        throw new TypeError('the ledger answered a reservation of no known state');
      switch (r.state) {
        case 'reserved':
          return null;
        case 'settled':
          return { state: 'settled', outcome: r.outcome };
        case 'unknown':
          return { state: 'unknown' };
        case 'held':
          await sleep(wait, signal);
          // Asked again through reserve: the store answers with its own clock, and never hands a held key out.
          r = await this.#ledger.reserve(key, owner, this.#leaseMs);
          break;
        default:
          throw new TypeError(
            `the ledger answered a reservation in state ${JSON.stringify((r as { state?: unknown }).state)}`,
          );
      }
    }
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
