/**
 * Where the runner keeps what must outlive one runner instance: remembered approval answers, used decision
 * nonces (so a decision cannot be replayed) and the ledger of executed calls (so resuming one state twice
 * never executes a tool twice).
 */
import type { ApprovalScope } from './types.js';

/** A remembered answer. `mac` is the runner's HMAC over the key and answer; a record that fails it is ignored. */
export interface RememberedAnswer {
  readonly answer: 'allow' | 'deny';
  readonly scope: Exclude<ApprovalScope, 'once'>;
  readonly mac: string;
}

/** What a settled call produced (enough to answer the model again without running the tool again). */
export interface LedgerOutcome {
  readonly content: string;
  readonly isError: boolean;
}

/** A ledger entry: claimed (the call started; its outcome is unknown until settled) or settled. */
export type LedgerEntry =
  { readonly settled: false; readonly outcome?: never } | { readonly settled: true; readonly outcome: LedgerOutcome };

/**
 * The approvals store. Every method is asynchronous so a remote store fits; `consume` and `claim` must be
 * atomic (of two concurrent callers exactly one wins), which is what makes a double resume safe. A store
 * that throws makes the call it was asked about not run.
 */
export interface ApprovalStore {
  /** The answer remembered under `key`, if any. */
  recall(key: string): Promise<RememberedAnswer | undefined>;
  remember(key: string, answer: RememberedAnswer): Promise<void>;
  /** Marks a decision's nonce used; true the first time, false ever after. */
  consume(nonce: string): Promise<boolean>;
  /** The ledger entry of a call, if it was claimed. */
  entry(key: string): Promise<LedgerEntry | undefined>;
  /** Claims a call for execution: null when this caller now holds it, the existing entry otherwise. */
  claim(key: string): Promise<LedgerEntry | null>;
  /** Records the outcome of a claimed call. */
  settle(key: string, outcome: LedgerOutcome): Promise<void>;
}

/**
 * The default store: in memory, for one process. Pass the same instance to a second runner to resume there;
 * use `SqliteApprovalStore` from `toolgate/sqlite` for processes that restart.
 */
export class InMemoryApprovalStore implements ApprovalStore {
  readonly #answers = new Map<string, RememberedAnswer>();
  readonly #nonces = new Set<string>();
  readonly #ledger = new Map<string, LedgerEntry>();

  async recall(key: string): Promise<RememberedAnswer | undefined> {
    return this.#answers.get(key);
  }

  async remember(key: string, answer: RememberedAnswer): Promise<void> {
    this.#answers.set(key, Object.freeze({ answer: answer.answer, scope: answer.scope, mac: answer.mac }));
  }

  async consume(nonce: string): Promise<boolean> {
    if (this.#nonces.has(nonce)) return false;
    this.#nonces.add(nonce);
    return true;
  }

  async entry(key: string): Promise<LedgerEntry | undefined> {
    return this.#ledger.get(key);
  }

  async claim(key: string): Promise<LedgerEntry | null> {
    const existing = this.#ledger.get(key);
    if (existing) return existing;
    this.#ledger.set(key, { settled: false });
    return null;
  }

  async settle(key: string, outcome: LedgerOutcome): Promise<void> {
    this.#ledger.set(
      key,
      Object.freeze({ settled: true, outcome: Object.freeze({ content: outcome.content, isError: outcome.isError }) }),
    );
  }
}

export function isApprovalStore(value: unknown): value is ApprovalStore {
  if (typeof value !== 'object' || value === null) return false;
  const store = value as Record<string, unknown>;
  return ['recall', 'remember', 'consume', 'entry', 'claim', 'settle'].every((m) => typeof store[m] === 'function');
}
