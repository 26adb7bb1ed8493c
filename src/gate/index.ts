/**
 * The gate's façade: the only file of `src/gate/` that the wings (gateway, inbox, adapters, runner,
 * policy files, CLI) import. Internal to the package: no entry point re-exports it whole. What is here is
 * what a route needs — dispatch, preview, the approval model's one implementation, the environment of a
 * registry — and nothing about how the path is built.
 */
export { decideCalls, dispatchCalls, previewCall } from './dispatch.js';
export type { DispatchResult, NotRunResult, PendingResult } from './dispatch.js';
export { environmentOf, isRegistry } from './environment.js';
export { agentNameOf, deny, refusalContent } from './precheck.js';
export type { GateContext, GateEnvironment, Precheck } from './precheck.js';
export type { Attempt, Candidate, DecidedCall, Halted, Refusal, Route, RouteState } from './route.js';
export {
  bindingOf,
  requestIdOf,
  requestOf,
  sameBinding,
  signAnswer,
  verifyAnswer,
  type BindingParts,
  type RequestShown,
} from './approval.js';
export type {
  Answer,
  ApprovalBinding,
  ApprovalInvalid,
  ApprovalKind,
  ApprovalOwner,
  ApprovalRequest,
  ApprovalSettings,
  AskOutcome,
  RememberScope,
  SignedAnswer,
} from '../contracts/approval.js';
