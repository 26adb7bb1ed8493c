/**
 * The gate's façade: the only file of `src/gate/` that the wings (gateway, inbox, adapters, runner,
 * policy files, CLI) import (`npm test` checks it). Internal to the package: no entry point re-exports it
 * whole. What is here is what a route needs — dispatch, preview, the approval model's one implementation,
 * the approver check — and nothing about how the path is built. Dispatch and preview take what the wings
 * have, a registry (a `ToolSource`; `withTools` adds a route's own tools in front of it): no file outside
 * src/gate/ reaches a registry's GateEnvironment. The types a route implements live in src/contracts/.
 */
export { decideCalls, dispatchCall, dispatchCalls, isRegistry, previewCall, withTools } from './environment.js';
export { gatewayCall } from './execute.js';
export { keepController, releasesSignal, takeController } from './controller-pool.js';
export {
  agentNameOf,
  allowlistFor,
  boundAgentOf,
  deny,
  refusalContent,
  ruleAndReason,
  type Precheck,
} from './precheck.js';
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
  NotRunResult,
  PendingResult,
  ToolResult,
  ToolSource,
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
