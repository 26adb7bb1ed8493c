/**
 * `toolgate/stores`: the store interfaces, the in-memory stores (the default), the JSONL audit sink and the
 * limiter. No driver is imported here: SQLite, PostgreSQL, Redis and OpenTelemetry are the `toolgate/sqlite`,
 * `toolgate/postgres`, `toolgate/redis` and `toolgate/otel` subpaths. This file is that subpath's public API.
 */
export {
  MemoryApprovalStore,
  MemoryAuditSink,
  MemoryCounterStore,
  MemoryLedger,
  MemoryNonceStore,
  MemoryRememberStore,
  MemoryStores,
  MemoryTallyStore,
  memoryStores,
} from './memory.js';
export type { MemoryStoreOptions } from './memory.js';
export { JsonlAuditSink, queryJsonl, fanOut, writeAudit, auditRegistry } from './audit.js';
export type { AuditRegistryOptions, AuditSubscription } from './audit.js';
export { Limiter, parseWindow } from '../limits/limiter.js';
export type {
  LimitCounter,
  LimitDimension,
  LimitRule,
  LimitSubject,
  LimitVerdict,
  LimiterOptions,
} from '../limits/limiter.js';
export type {
  Answer,
  ApprovalBinding,
  ApprovalRequest,
  ApprovalSource,
  ApprovalStore,
  AuditQuery,
  AuditReader,
  AuditRecord,
  AuditSink,
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
  PendingFilter,
  PendingRecord,
  PendingStatus,
  RememberScope,
  RememberStore,
  RememberedAnswer,
  Stores,
  TallyStore,
} from './types.js';
