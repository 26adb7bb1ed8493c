/**
 * The gate's façade: the only file of `src/gate/` that the wings (gateway, inbox, adapters, runner,
 * policy files, CLI) import (`npm test` checks it). Internal to the package: no entry point re-exports it
 * whole. What is here is what a route needs — dispatch, preview, the approval model's one implementation,
 * the approver check, the environment of a registry — and nothing about how the path is built. The types a
 * route implements live in src/contracts/.
 */
export { decideCalls, dispatchCalls, dispatchOwnCall, ownResult, previewCall } from './dispatch.js';
export { environmentOf, isRegistry } from './environment.js';
export { agentNameOf, allowlistFor, deny, refusalContent, ruleAndReason, type Precheck } from './precheck.js';
export {
  approvalRequest,
  bindingOf,
  consumeNonce,
  requestIdOf,
  requestOf,
  sameBinding,
  signAnswer,
  verifyAnswer,
  type BindingParts,
  type RequestShown,
} from './approval.js';
export { approverVerdict, checkApproverRules, type ApproverSubject } from './approvers.js';
export type {
  DispatchResult,
  GateContext,
  GateEnvironment,
  NotRunResult,
  PendingResult,
  ToolResult,
} from '../contracts/gate.js';
export type {
  Attempt,
  Candidate,
  DecidedCall,
  Halted,
  Meter,
  Refusal,
  Route,
  RouteMeter,
  RouteObserver,
  RoutePerson,
  RouteState,
} from '../contracts/route.js';
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
