/**
 * toolgate's public API. This file *is* the public surface: every name exported here is public and
 * typed; nothing else is. Adapters live under subpath exports (toolgate/mcp, toolgate/ai-sdk,
 * toolgate/openai-agents) and this entry imports none of them.
 */
export { canonical } from './names.js';
export { skeleton, findConfusables, CONFUSABLES_VERSION } from './unicode/confusables.js';
export type { ConfusablesMode, ConfusablePair } from './unicode/confusables.js';
export {
  ToolgateError,
  ConfigurationError,
  ToolNotPermittedError,
  RunStateError,
  ErrorCode,
  isToolgateError,
} from './errors.js';
export type { RefusalLayer } from './errors.js';
export { ToolAllowlist, ToolAllowlistGuard } from './allowlist.js';
export type { AllowlistLayer, ToolAllowlistOptions, ToolAllowlistGuardOptions, ToolDecision } from './allowlist.js';
export {
  PermissionResult,
  PermissionPolicy,
  ALLOW_READONLY,
  ASK_DESTRUCTIVE,
  DENY_PRIVILEGED,
  ASK_NETWORK,
  ASK_FILE_SYSTEM,
} from './permissions/index.js';
export type {
  PermissionRule,
  PermissionPolicyOptions,
  PolicyEvaluation,
  RuleTrace,
  PermissionHandler,
  PermissionRequest,
  HandlerAnswer,
} from './permissions/index.js';
export { defineTool, ToolTag } from './tool.js';
export type { Tool, ToolDefinition, ToolMetadata, ToolMetadataInput, ToolExecution, ToolLocality } from './tool.js';
export type { StandardSchemaV1, JsonSchema, ToolParameters } from './schema.js';
export { ToolRegistry } from './registry.js';
export type { ToolRegistryOptions, ToolResult, ToolCallResult, RegistryEvent } from './registry.js';
export type { GateContext, AgentIdentity } from './gate/precheck.js';
export type { Decision, AllowDecision, DenyDecision, DenyStage, DecisionBase } from './decision.js';
export type {
  CallFormat,
  SchemaFormat,
  ToolCallInput,
  ToolgateCall,
  OpenAIChatToolCall,
  OpenAIResponsesFunctionCall,
  AnthropicToolUse,
  GeminiFunctionCallPart,
  ShapedToolResult,
  OpenAIChatToolResult,
  OpenAIResponsesFunctionCallOutput,
  AnthropicToolResult,
  GeminiFunctionResponsePart,
  ToolSchema,
} from './formats/index.js';
export { AgentRunner } from './runner/runner.js';
export type { AgentRunnerOptions } from './runner/runner.js';
export { ScriptedModel } from './runner/scripted-model.js';
export type { ScriptTurn, ScriptedModelOptions } from './runner/scripted-model.js';
export { InMemoryApprovalStore } from './runner/approval-store.js';
export type { ApprovalStore, RememberedAnswer, LedgerEntry, LedgerOutcome } from './runner/approval-store.js';
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
  ToolMessage,
  RunResult,
  RunResultBase,
  RunStatus,
  RunTally,
  BudgetCap,
  RunState,
  FrameState,
  TurnState,
  PendingApproval,
  ApprovalDecision,
  ApprovalScope,
  ApprovalAnswer,
  ApprovalHandler,
  RunEvent,
  RunEventBase,
  RunEventMap,
  RunEventType,
} from './runner/types.js';
