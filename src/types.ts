/**
 * `toolgate/types`: the core's secondary public types — the parts of options, schemas, handler answers,
 * policy traces and the building blocks of a Decision — for code that names them. The root entry
 * `toolgate` keeps the types most code needs. Types only. This file is the subpath's public surface.
 */
export type { RefusalLayer } from './errors.js';
export type { AllowlistLayer, ToolAllowlistGuardOptions } from './allowlist.js';
export type { ConfusablesMode, ConfusablePair } from './unicode/confusables.js';
export type { PolicyEvaluation, RuleTrace, HandlerAnswer } from './permissions/index.js';
export type { ToolMetadataInput, ToolExecution, ToolLocality } from './tool.js';
export type { StandardSchemaV1, JsonSchema, ToolParameters } from './schema.js';
export type { AgentIdentity } from './contracts/gate.js';
export type { AllowDecision, DenyStage, DecisionBase } from './decision.js';
export type { ContextSource, ScopeMap } from './config.js';
// The stores' secondary types (toolgate/stores keeps the store interfaces and the memory stores).
export type { MemoryStoreOptions } from './stores/memory.js';
export type { AuditRegistryOptions, AuditSubscription } from './stores/audit.js';
export type { LimitCounter, LimitDimension, LimitSubject, LimitVerdict } from './limits/limiter.js';
export type {
  ApprovalBinding,
  ApprovalSource,
  AuditQuery,
  AuditRecord,
  CounterCharge,
  CounterVerdict,
  LedgerQuery,
  LedgerReservation,
  LedgerSettlement,
  LedgerSettlementRecord,
  PendingFilter,
  PendingStatus,
  RememberScope,
  RunSpend,
  RunCaps,
  SpendVerdict,
} from './stores/types.js';
// The runner's secondary types (toolgate/runner keeps what a run is started, resumed and read with).
export type {
  ToolMessage,
  RunResultBase,
  RunTally,
  BudgetCap,
  RunIdentity,
  FrameState,
  TurnState,
  ApprovalScope,
  RunEventBase,
} from './runner/types.js';
