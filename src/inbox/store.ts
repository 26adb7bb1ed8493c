/**
 * The approval store the inbox reads and answers through, shaped as the contract's `ApprovalStore`
 * (src/stores/types.ts once the stores land): pending records, an atomic first-answer-wins `answer`, and
 * an optional `watch` for live updates. {@link MemoryInboxStore} is the one-process implementation.
 */

/** How long a human's answer is remembered: this call only, the rest of the run, or the session. */
export type RememberScope = 'once' | 'run' | 'session';

/** A person's answer to a pending approval. */
export interface Answer {
  readonly effect: 'allow' | 'deny';
  /** @default 'once' */
  readonly remember?: RememberScope;
  /** Edited arguments (allow only): the edited call passes the whole gate again. */
  readonly arguments?: Readonly<Record<string, unknown>>;
  /** A deny's reason, given back to the model. */
  readonly reason?: string;
  /** Who answered (audit; four eyes). */
  readonly approver?: string;
}

/** What an approval is bound to: the exact call. */
export interface ApprovalBinding {
  readonly scope: { readonly kind: 'run' | 'session'; readonly id: string };
  readonly callId: string;
  /** The canonical tool name. */
  readonly tool: string;
  /** SHA-256 of the canonical JSON of the validated arguments. */
  readonly argsHash: string;
  readonly policyVersion: string | null;
  /** Epoch ms. */
  readonly expiresAt: number;
  readonly nonce: string;
}

/** What a person is shown. */
export interface ApprovalRequest {
  readonly id: string;
  readonly binding: ApprovalBinding;
  readonly toolName: string;
  readonly canonical: string;
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly agent: string;
  readonly tenant: string | null;
  readonly caller: string | null;
  readonly runId: string | null;
  readonly rule: string;
  readonly reason: string;
  /** The explain trace where available. */
  readonly trace?: unknown;
}

/** Where a pending approval came from. */
export type ApprovalSource = 'runner' | 'gateway' | 'registry';

/** An approval request as the store keeps it. */
export interface PendingRecord extends ApprovalRequest {
  readonly source: ApprovalSource;
  /** Epoch ms. */
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly status: 'pending' | 'answered' | 'expired';
  readonly answer?: Answer;
  /** Epoch ms. */
  readonly answeredAt?: number;
}

/** The store of pending approvals and their answers. */
export interface ApprovalStore {
  put(pending: PendingRecord): Promise<void>;
  get(id: string): Promise<PendingRecord | undefined>;
  list(filter?: {
    readonly tenant?: string;
    readonly status?: 'pending' | 'answered' | 'expired';
  }): Promise<PendingRecord[]>;
  /** Atomic: the first answer wins and returns true; every later one returns false. */
  answer(id: string, answer: Answer): Promise<boolean>;
  watch?(listener: (id: string) => void): () => void;
}

/** The store in one process: a Map. Answers are checked-and-set in one synchronous step. */
export class MemoryInboxStore implements ApprovalStore {
  readonly #records = new Map<string, PendingRecord>();
  readonly #listeners = new Set<(id: string) => void>();
  readonly #now: () => number;

  constructor(options: { readonly now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  async put(pending: PendingRecord): Promise<void> {
    const existing = this.#records.get(pending.id);
    // The same call asked again (a run paused again on it) keeps its first record and answer.
    if (existing) return;
    this.#records.set(pending.id, Object.freeze({ ...pending }));
    this.#notify(pending.id);
  }

  async get(id: string): Promise<PendingRecord | undefined> {
    return this.#records.get(id);
  }

  async list(
    filter: { readonly tenant?: string; readonly status?: 'pending' | 'answered' | 'expired' } = {},
  ): Promise<PendingRecord[]> {
    return [...this.#records.values()].filter(
      (r) =>
        (filter.tenant === undefined || r.tenant === filter.tenant) &&
        (filter.status === undefined || r.status === filter.status),
    );
  }

  async answer(id: string, answer: Answer): Promise<boolean> {
    const record = this.#records.get(id);
    if (!record || record.status !== 'pending') return false;
    this.#records.set(
      id,
      Object.freeze({ ...record, status: 'answered', answer: Object.freeze({ ...answer }), answeredAt: this.#now() }),
    );
    this.#notify(id);
    return true;
  }

  watch(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #notify(id: string): void {
    for (const listener of this.#listeners) {
      try {
        listener(id);
      } catch {
        // a failing listener must not stop the store
      }
    }
  }
}

/** Single-use values (signed links): `consume` is true once per nonce, false ever after. */
export interface NonceStore {
  consume(nonce: string, ttlMs: number): Promise<boolean>;
}

/** Nonces in one process; expired ones are dropped as new ones come. */
export class MemoryNonceStore implements NonceStore {
  readonly #used = new Map<string, number>();
  readonly #now: () => number;

  constructor(options: { readonly now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  async consume(nonce: string, ttlMs: number): Promise<boolean> {
    const now = this.#now();
    for (const [key, until] of this.#used) if (until <= now) this.#used.delete(key);
    if (this.#used.has(nonce)) return false;
    this.#used.set(nonce, now + Math.max(ttlMs, 1));
    return true;
  }
}
