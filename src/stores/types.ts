/**
 * The stores' types, as `toolgate/stores` publishes them. Every store interface is declared once, in
 * `src/contracts/stores.ts` (the bottom of the import graph); this file re-exports them. No implementation is
 * imported by the root entry: memory lives in `stores/memory.ts`, the servers in the `toolgate/sqlite`,
 * `toolgate/postgres` and `toolgate/redis` subpaths.
 */
// The approval model's shapes are declared once, in src/contracts/approval.ts.
import type { Answer, ApprovalBinding, ApprovalRequest, RememberScope } from '../contracts/approval.js';
export type { Answer, ApprovalBinding, ApprovalRequest, RememberScope };

// ── pending approvals ──

/** Which route put a request to a person. */
export type ApprovalSource = 'runner' | 'gateway' | 'registry';

/** Where a pending approval stands. `expired`: not answered before its `expiresAt`. */
export type PendingStatus = 'pending' | 'answered' | 'expired';

/** A request waiting for (or holding) a person's answer. */
export interface PendingRecord extends ApprovalRequest {
  readonly source: ApprovalSource;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Epoch ms; after it the request can no longer be answered. */
  readonly expiresAt: number;
  readonly status: PendingStatus;
  /** The first answer, once given. */
  readonly answer: Answer | null;
  readonly answeredAt: number | null;
}

/** What {@link ApprovalStore.list} selects. */
export interface PendingFilter {
  readonly tenant?: string;
  readonly status?: PendingStatus;
}

/**
 * Pending approvals and their answers (PostgreSQL, SQLite, memory). `answer` is atomic across workers: the
 * first answer wins and every later one gets false, so two people clicking at once cannot both decide.
 */
export interface ApprovalStore {
  /** Stores a new request (its status should be `pending`); a second put with the same id keeps the first. */
  put(pending: PendingRecord): Promise<void>;
  /** The request, with `status` computed now (a pending one past `expiresAt` reads as `expired`). */
  get(id: string): Promise<PendingRecord | undefined>;
  /** Requests, oldest first. */
  list(filter?: PendingFilter): Promise<PendingRecord[]>;
  /** Records the first answer of a pending, unexpired request: true; false for any later or late answer. */
  answer(id: string, answer: Answer): Promise<boolean>;
  /** Tells `listener` the id of every request put or answered (from any worker where the store can). Returns the unsubscribe. */
  watch?(listener: (id: string) => void): () => void;
}

export type {
  AuditQuery,
  AuditReader,
  AuditRecord,
  AuditSink,
  BudgetCap,
  CounterCharge,
  CounterStore,
  CounterVerdict,
  Ledger,
  LedgerEntry,
  LedgerOutcome,
  LedgerQuery,
  LedgerReservation,
  LedgerSettlement,
  LedgerSettlementRecord,
  NonceStore,
  RememberStore,
  RememberedAnswer,
  RunCaps,
  RunSpend,
  SpendVerdict,
  TallyStore,
} from '../contracts/stores.js';
import type { CounterStore, Ledger, NonceStore, RememberStore, TallyStore } from '../contracts/stores.js';

/** The stores one deployment shares (see the contract's `Stores`). */
export interface Stores {
  readonly approvals: ApprovalStore;
  readonly nonces: NonceStore;
  readonly remembered: RememberStore;
  readonly ledger: Ledger;
  readonly tallies: TallyStore;
  readonly counters: CounterStore;
}
