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
