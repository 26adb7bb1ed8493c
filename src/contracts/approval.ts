/**
 * THE approval model: one shape for every route that puts an `ask` to a person — the registry's handler
 * route, the AgentRunner's durable approvals, the MCP gateway (elicitation, the shared stores, the inbox,
 * MCP 2026-07-28 `input_required`), the AI SDK and OpenAI Agents adapters. TYPES ONLY (the bottom of the
 * import graph); the one implementation of minting, binding, `sameBinding`, signing and verifying is
 * `src/gate/approval.ts`; the one check of who may see or answer a request is `approverVerdict` in `src/gate/approvers.ts`.
 *
 *   an ask ──▶ ApprovalRequest (id = MAC over its ApprovalBinding) ──▶ a person ──▶ Answer
 *          ──▶ SignedAnswer (MAC over request id, binding, answer) ──▶ verified against the call now
 *          ──▶ sameBinding(given, want): null, or the reason text ──▶ nonce consumed (single use)
 *
 * Stored, a request is an {@link ApprovalRecord} (the stores' `PendingRecord` is its alias).
 */

/**
 * What an approval is about: a tool call, a resource read (or a completion of its template), a prompt get,
 * or a policy reload that widens access (held until a person approves it; its `tool` is the new policy
 * version and its parameters the diff).
 */
export type ApprovalKind = 'tool' | 'resource' | 'prompt' | 'reload';

/** How long an answer is remembered: this call only, the run, or the session. */
export type RememberScope = 'once' | 'run' | 'session';

/**
 * Whom an approval belongs to: a run (the AgentRunner's run id) or a session (the gateway's authenticated
 * subject, or the tenant and caller of a registry context). The kinds never collide: the session `run:R1`
 * is not the run `R1`. (Called `ApprovalScope` in 0.2's gate; the runner's `ApprovalScope` was a
 * {@link RememberScope} — two opposite meanings of one name, which is why the owner is named apart.)
 */
export interface ApprovalOwner {
  readonly kind: 'run' | 'session';
  readonly id: string;
}

/**
 * What an approval is bound to: exactly one call. Every route mints it the same way (gate/approval.ts) and
 * every route compares it with one function (`sameBinding`), so "same call" means the same everywhere.
 */
export interface ApprovalBinding {
  readonly kind: ApprovalKind;
  readonly owner: ApprovalOwner;
  /**
   * The agent that made the call: the gate context's agent (in process), the route's agent (the gateway's
   * `/mcp/<agent>`); null for an ask no agent made (a held policy reload, a call whose context names no agent:
   * shown as the default `agent`, never bound as an agent declared under that name). An answer for one agent's call
   * never counts for another agent's, even in one session under one rule. A binding stored without it
   * (asked before the agent was bound) matches no call.
   */
  readonly agent: string | null;
  /** The call's id (the model's tool-call id, a gateway request's minted id). */
  readonly callId: string;
  /** The canonical tool name; for `resource` the normalised URI, for `prompt` the prompt's canonical name. */
  readonly tool: string;
  /** SHA-256 (hex) of the canonical JSON of the validated, frozen snapshot of the arguments. */
  readonly argsHash: string;
  /** The rule that asked (the person was shown its reason). */
  readonly rule: string;
  readonly policyVersion: string | null;
  /** The pinned definition's hash where the route pins what it calls (the gateway), else null. */
  readonly pin: string | null;
  /** Who asked: the caller's id (a token's subject, a user), or null. */
  readonly caller: string | null;
  readonly tenant: string | null;
  /** Epoch milliseconds; an answer after it does not count. */
  readonly expiresAt: number;
  /** Single use: consumed when an answer to this request is applied (together with the ledger claim where there is one). */
  readonly nonce: string;
}

/** What a person (inbox, SDK, elicitation, runner handler) is shown, bound to the call. */
export interface ApprovalRequest {
  /** MAC over the binding under the route's secret. */
  readonly id: string;
  readonly binding: ApprovalBinding;
  /** Repeated from the binding for readers that only show it. */
  readonly kind: ApprovalKind;
  /** The tool's declared name (or the URI / prompt name as asked), and its canonical form. */
  readonly toolName: string;
  readonly canonical: string;
  /** The frozen snapshot the call would run with. */
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly agent: string;
  readonly tenant: string | null;
  readonly caller: string | null;
  readonly runId: string | null;
  readonly rule: string;
  readonly reason: string;
  /** The policy's explain trace of the decision, where the route has it. */
  readonly trace?: unknown;
}

/** A person's (or an SDK's) answer to an ask. */
export interface Answer {
  readonly effect: 'allow' | 'deny';
  /** @default 'once' */
  readonly remember?: RememberScope;
  /** Edited arguments (allow only): the edited call passes the whole gate again. */
  readonly arguments?: Readonly<Record<string, unknown>>;
  /** A deny's reason, given back to the model. */
  readonly reason?: string;
  /** Who answered (audit; four eyes). */
  readonly approver?: string;
  /** The answer was remembered from an earlier approval for this run or session (the Decision's reason says so). */
  readonly recalled?: 'run' | 'session';
  /**
   * A deny that is no person's no: nobody has answered yet, and the call is refused for now. Says where the
   * request waits (`in the shared approval store as request 7f3a…`); the Decision's reason says it waits,
   * not that an approver denied it. The same call made again once the request is answered finds the answer
   * (the gateway's replicas). Deny only.
   */
  readonly waiting?: string;
  /**
   * A deny nobody gave: no person could be asked (the client offers no way to ask). Says why; the
   * Decision's reason says nobody was asked, not that an approver denied it. Deny only.
   */
  readonly unasked?: string;
  /**
   * Called once the answer decided the call (in time: never after the handler timed out), before the
   * Decision is made; a failure denies the call. The runner remembers a run or session answer here.
   */
  readonly settle?: () => Promise<void>;
}

/** An approval that was presented but does not verify; `reason` names what failed. */
export interface ApprovalInvalid {
  readonly effect: 'invalid';
  readonly reason: string;
}

/** What a route's person answers: an Answer, `pending` (ask later: the route pauses), or an approval that failed verification. */
export type AskOutcome = Answer | { readonly effect: 'pending' } | ApprovalInvalid;

/** An answer signed for one request: what a route stores or sends and gets back before it counts. */
export interface SignedAnswer {
  readonly requestId: string;
  readonly binding: ApprovalBinding;
  /** The answer as plain JSON (no `settle`). */
  readonly answer: Answer;
  readonly mac: string;
}

/**
 * How a route binds its approvals. The secret is set by the route's OWNER (the runner's `secret`, the
 * gateway's `--approval-secret`, the inbox's secret): never a per-process random key, so an id minted on
 * one worker verifies on another.
 */
export interface ApprovalSettings {
  /** The HMAC key of request ids and signed answers (at least 16 bytes). */
  readonly secret: Uint8Array;
  /** Whom approvals belong to. @default the run of the context, else the session of its tenant and caller */
  readonly owner?: ApprovalOwner;
  /** How long a request can be answered. @default 86_400_000 (24 h) */
  readonly ttlMs?: number;
  /** The pinned definition's hash of the call being asked about (the gateway). @default null */
  readonly pin?: string | null;
  /**
   * What the call is: the gateway decides a resource read or a prompt get as a call of a gate-level tool
   * (`resource`, `prompt`) and says so here, per call. @default 'tool'
   */
  readonly kind?: ApprovalKind;
  /**
   * What the binding's `tool` names when it is not the canonical tool name: the normalised URI of a
   * `resource`, the canonical prompt name of a `prompt`. @default the call's canonical tool name
   */
  readonly target?: string;
}

// ── stored ──

/** Which route put a request to a person. */
export type ApprovalSource = 'runner' | 'gateway' | 'registry';

/** Where a stored request stands. `expired`: not answered before its `expiresAt`. */
export type ApprovalStatus = 'pending' | 'answered' | 'expired';

/**
 * A paused AgentRunner run, stored with each of its pending approvals so that any worker or inbox process
 * on the same store can resume it (the state is the runner's signed, JSON-serialisable RunState; the
 * runner verifies its MAC on resume, so the store holds no authority).
 */
export interface PausedRun {
  readonly runId: string;
  /** The signed RunState, as JSON. */
  readonly state: unknown;
  /** Every approval id of this pause: the run is resumed once all of them are answered. */
  readonly approvals: readonly string[];
}

/** A request as it is stored, waiting for (or holding) a person's answer. */
export interface ApprovalRecord extends ApprovalRequest {
  readonly source: ApprovalSource;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Epoch ms; after it the request can no longer be answered (the binding's `expiresAt`). */
  readonly expiresAt: number;
  readonly status: ApprovalStatus;
  /** The first answer, once given. */
  readonly answer: Answer | null;
  readonly answeredAt: number | null;
  /** The paused run this request belongs to (runner approvals), else null. */
  readonly paused?: PausedRun | null;
  /** A one-line summary for the person (the policy's per-tool template), where the route has one. */
  readonly summary?: string;
  /** The asking rule's risk, where the policy sets one. */
  readonly risk?: 'low' | 'medium' | 'high';
}

// ── who may see and answer ──

/** Who is looking at or answering a request (an inbox session, a bearer token, a gateway approver). */
export interface ApproverIdentity {
  /** The approver's name as the policy lists approvers (an email, a subject). */
  readonly id: string;
  /**
   * The tenants this approver acts for; null: not bound to a tenant (an operator of a single-tenant
   * deployment). A request of another tenant is invisible to them (404), whatever the lists say. A `null`
   * entry stands for the requests with no tenant: a gateway serving no tenant binds its approvers to `[null]`
   * (a store it shares holds other tenants' requests too).
   */
  readonly tenants: readonly (string | null)[] | null;
}

/** The policy's `approvals:` section as the check reads it: approvers by tenant and tool, four eyes. */
export interface ApproverRules {
  /** Approvers by tenant; `*` applies to every tenant without its own list. */
  readonly tenants?: Readonly<Record<string, readonly string[]>>;
  /** Approvers by canonical tool name. */
  readonly tools?: Readonly<Record<string, readonly string[]>>;
  /** Nobody answers a request they made themselves (the caller). @default false */
  readonly fourEyes?: boolean;
}

/**
 * The one answer to "may this approver see / answer this request": checked once, before anything about the
 * request is shown, listed, streamed, refused or changed. `hidden`: the request does not exist for them
 * (404, and nothing about it is said); `refused`: they may see it but not answer it, and `reason` says why.
 */
export type ApproverVerdict =
  | { readonly may: true }
  | { readonly may: false; readonly hidden: true }
  | { readonly may: false; readonly hidden: false; readonly reason: string };
