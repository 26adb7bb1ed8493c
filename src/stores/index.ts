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
export { JsonlAuditSink, fanOut, auditRegistry } from './audit.js';
export { Limiter } from '../limits/limiter.js';
export type { LimitRule, LimiterOptions } from '../limits/limiter.js';
// The stores' secondary types (their records, queries, verdicts and options) are in toolgate/types.
export type {
  Answer,
  ApprovalRequest,
  ApprovalStore,
  AuditReader,
  AuditSink,
  CounterStore,
  Ledger,
  LedgerEntry,
  LedgerOutcome,
  NonceStore,
  PendingRecord,
  RememberStore,
  RememberedAnswer,
  Stores,
  TallyStore,
} from './types.js';
