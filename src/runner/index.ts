/**
 * `toolgate/runner`: everything about AgentRunner beyond its front door — the model interface and
 * ScriptedModel, run options and results, the RunState and its frames, approvals, run events, and the
 * stores it takes. The root entry `toolgate` also exports AgentRunner, Agent, Model, TenantLimits,
 * RunResult, RunState, PendingApproval and ApprovalDecision (the same bindings). This file is the
 * subpath's public surface.
 */
export { AgentRunner } from './runner.js';
export type { AgentRunnerOptions } from './runner.js';
export { ScriptedModel } from './scripted-model.js';
export type { ScriptTurn, ScriptedModelOptions } from './scripted-model.js';
// The stores the runner takes are toolgate/stores' (`AgentRunner({ stores })`): their 0.1 name here. The
// stores' types (ApprovalStore, RememberedAnswer, LedgerEntry, LedgerOutcome) are toolgate/stores'; the
// run's secondary types (its spend, frames, turns, event bases) are in toolgate/types.
export { MemoryStores as InMemoryApprovalStore } from '../stores/memory.js';
export type { RunnerStores } from './options.js';
export type {
  Agent,
  AgentSpec,
  TenantLimits,
  TenantProvider,
  Model,
  ModelRequest,
  ModelResponse,
  ModelTool,
  RunCaller,
  RunOptions,
  ResumeOptions,
  RunMessage,
  RunToolCall,
  RunResult,
  RunStatus,
  RunState,
  PendingApproval,
  ApprovalDecision,
  ApprovalAnswer,
  ApprovalHandler,
  RunEvent,
  RunEventMap,
  RunEventType,
} from './types.js';
