/**
 * toolgate's public API: the root entry. This file *is* the public surface of `toolgate`: every name
 * exported here is public and typed; nothing else is. It stays at most 45 names (a test counts them):
 * the names ../shared/DESIGN.md pins, the Decision / result / context types, and the runner's front door.
 * The rest lives in subpaths, each with an entry of its own:
 *
 *   toolgate/formats         provider call and result shapes (types)
 *   toolgate/runner          the runner's state, events, model and store types, ScriptedModel, InMemoryApprovalStore
 *   toolgate/types           the core's secondary types (option parts, schema and Decision building blocks)
 *   toolgate/policy          policy files, lint (and the confusables check), explain, watch
 *   toolgate/mcp, toolgate/ai-sdk, toolgate/openai-agents   adapters; this entry imports none of them
 */
export { canonical } from './names.js';
export {
  ToolgateError,
  ConfigurationError,
  ToolNotPermittedError,
  RunStateError,
  ErrorCode,
  isToolgateError,
} from './errors.js';
export { ToolAllowlist, ToolAllowlistGuard } from './allowlist.js';
export type { ToolAllowlistOptions, ToolDecision } from './allowlist.js';
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
  PermissionHandler,
  PermissionRequest,
} from './permissions/index.js';
export { defineTool, ToolTag } from './tool.js';
export type { Tool, ToolDefinition, ToolMetadata } from './tool.js';
export { ToolRegistry } from './registry.js';
export type { ToolRegistryOptions, ToolResult, ToolCallResult, RegistryEvent } from './registry.js';
export type { GateContext } from './contracts/gate.js';
export type { Decision, DenyDecision } from './decision.js';
export { AgentRunner } from './runner/runner.js';
export type { AgentRunnerOptions } from './runner/runner.js';
export type {
  Agent,
  Model,
  TenantLimits,
  RunResult,
  RunState,
  PendingApproval,
  ApprovalDecision,
} from './runner/types.js';
