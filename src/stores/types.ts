/**
 * The stores' types, as `toolgate/stores` publishes them. Every store interface is declared once, in
 * `src/contracts/stores.ts` (the bottom of the import graph); this file re-exports them. No implementation is
 * imported by the root entry: memory lives in `stores/memory.ts`, the servers in the `toolgate/sqlite`,
 * `toolgate/postgres` and `toolgate/redis` subpaths.
 */
export type {
  Answer,
  ApprovalBinding,
  ApprovalRecord,
  ApprovalRequest,
  ApprovalSource,
  PausedRun,
  RememberScope,
} from '../contracts/approval.js';
// The stores' 0.1 names of the approval model's stored shapes.
export type {
  ApprovalRecord as PendingRecord,
  ApprovalStatus as PendingStatus,
  ApprovalStatus,
} from '../contracts/approval.js';
export type { ApprovalFilter as PendingFilter, ApprovalFilter, ApprovalStore } from '../contracts/stores.js';
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
  Stores,
  TallyStore,
} from '../contracts/stores.js';
