/**
 * The Decision: one record per call, whatever route it came by, saying what was decided, at which
 * stage of the gate, and by which layer or rule.
 */
import type { RefusalLayer } from './errors.js';

/** Fields every Decision carries. */
export interface DecisionBase {
  /** The call's id (from the model's call, or generated). */
  readonly callId: string;
  /** The tool name as it was asked for. */
  readonly tool: string;
  /** Its canonical form. */
  readonly canonical: string;
  readonly agent: string;
  readonly tenant: string | null;
  readonly runId: string | null;
  /** The validated arguments, or null when the call was refused before validation succeeded. */
  readonly parameters: Readonly<Record<string, unknown>> | null;
  /** The rule that decided, where one did. */
  readonly rule: string | null;
  /** Why, in words: shown to the model on a refusal and to people in explanations. */
  readonly reason: string;
  /**
   * Who answered, where a rule answered `ask`: the policy's own handler, the registry's handler, or the
   * person of the route the call came by (`runner`: durable approvals; `adapter`: an SDK's own approval
   * flow; `gateway`: the MCP gateway's approver, e.g. elicitation).
   */
  readonly asked: 'policy' | 'registry' | 'runner' | 'adapter' | 'gateway' | null;
  /** The version of the policy in force, or null without one. */
  readonly policyVersion: string | null;
}

/** Where in the gate a call was refused. */
export type DenyStage =
  'lookup' | 'arguments' | 'validation' | 'allowlist' | 'policy' | 'handler' | 'budget' | 'depth' | 'limit' | 'store';

/** An allowed call: it will execute. */
export interface AllowDecision extends DecisionBase {
  readonly effect: 'allow';
  readonly stage: 'policy';
  /** `no_policy`: no policy is set; `rule`/`fallback`: the policy answered allow; `handler`: a handler approved an ask. */
  readonly by: 'no_policy' | 'rule' | 'fallback' | 'handler';
  readonly layer: null;
}

/** A refused call: it does not execute, and the model gets an error result. */
export type DenyDecision = DecisionBase & { readonly effect: 'deny' } & (
    | { readonly stage: 'lookup'; readonly by: 'unknown_tool'; readonly layer: 'not_declared' }
    | { readonly stage: 'arguments'; readonly by: 'malformed_call' | 'malformed_arguments'; readonly layer: null }
    | { readonly stage: 'validation'; readonly by: 'invalid_arguments'; readonly layer: null }
    | { readonly stage: 'allowlist'; readonly by: 'allowlist'; readonly layer: RefusalLayer }
    | { readonly stage: 'policy'; readonly by: 'rule' | 'fallback' | 'rule_error' | 'no_handler'; readonly layer: null }
    | {
        readonly stage: 'handler';
        /** `approval_invalid`: an approval was presented that does not verify (MAC, expiry, used, another call). */
        readonly by: 'handler' | 'handler_error' | 'handler_timeout' | 'handler_invalid' | 'approval_invalid';
        readonly layer: null;
      }
    /** A cap of the run (maxToolCalls, maxCost) stopped the call: the run ends; the call is not an attempt. */
    | { readonly stage: 'budget'; readonly by: 'budget'; readonly layer: null }
    /** A delegation past the runner's `maxDepth`: refused like a policy denial, and the run goes on. */
    | { readonly stage: 'depth'; readonly by: 'depth'; readonly layer: null }
    /** A rate or usage limit (the route's charge) stopped the call. */
    | { readonly stage: 'limit'; readonly by: 'limit'; readonly layer: null }
    /**
     * A store the route's charge needed (a counter store) could not be asked or answered garbage: the call
     * is refused (fail closed), and it is not a limit's refusal — no limit was found full.
     */
    | { readonly stage: 'store'; readonly by: 'store'; readonly layer: null }
  );

/** The verdict on one call. */
export type Decision = AllowDecision | DenyDecision;
