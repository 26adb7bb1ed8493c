/**
 * Durable approvals: how the runner puts an `ask` to a person (its handler, which may answer `pending`),
 * remembers answers for a run or a session, and accepts the answers given while a run is paused — signed
 * ones (`AgentRunner.answer`) and ones read from an approval store (the inbox) — only for exactly the call
 * they answer.
 *
 * Every approval is the approval model's (contracts/approval.ts, minted and compared by gate/approval.ts):
 * the gate mints the request of an ask under the runner's secret, bound to the run (owner `run`), the call,
 * the canonical tool, the arguments' hash, the rule, the policy version, the caller and the tenant, with an
 * expiry and a single-use nonce. `sameBinding` is the one comparison of an answer's binding with the call
 * as it is decided now. The nonce is used up together with the ledger claim of the call (route.ts), so a
 * resume that fails on a store first (a server down) uses up nothing.
 *
 * A remembered answer is stored under `[kind, id]` with kind `run` (the run id) or `session` (the session
 * id), so a caller named `run:R1` can never read what run R1 remembered.
 */
import type { Answer, ApprovalRecord, ApprovalRequest, AskOutcome } from '../contracts/approval.js';
import { canonicalJson, hashOf, macOf, sameMac } from '../crypto.js';
import type { Decision } from '../decision.js';
import type { Emitter } from '../events.js';
import { consumeNonce, sameBinding, signAnswer, verifyAnswer, type ToolSource } from '../gate/index.js';
import { describe } from '../names.js';
import type { PermissionRequest } from '../permissions/handler.js';
import type { RunnerSettings } from './options.js';
import type { CallKey } from './ledger.js';
import { emitRun, type Frame, type Run, type Turn } from './run.js';
import type { ApprovalDecision, ApprovalScope, GrantedAnswer, PendingApproval, RunEvent } from './types.js';

/**
 * What the run route learns from the runner's person for one dispatch: the answers given on resume it
 * applied (and what was wrong with them), and the request of each call left pending.
 */
export interface GrantUse {
  readonly applied: Map<string, { readonly problem: string | null }>;
  pending(approval: PendingApproval): void;
}

/** What a remembered answer is bound to, beside its scope. */
interface Bound {
  readonly canonical: string;
  readonly argsHash: string;
  readonly policyVersion: string | null;
}

/** Who a remembered answer is shared with: one run, or one session. Two kinds, so their ids never collide. */
interface Sharing {
  readonly kind: 'run' | 'session';
  readonly id: string;
}

const SCOPES: readonly ApprovalScope[] = ['once', 'run', 'session'];
/** How long a used nonce stays used beyond its approval's expiry. */
const NONCE_TTL_MS = 30 * 86_400_000;
/**
 * The nonce store handed to `verifyAnswer` on resume: nothing is used up there. A decision's nonce is
 * consumed with the ledger claim of its call ({@link DurableApprovals.useNonce}).
 */
const DEFERRED = { consume: (): Promise<boolean> => Promise.resolve(true) };

export class DurableApprovals {
  readonly #settings: RunnerSettings;
  readonly #events: Emitter<RunEvent>;

  constructor(settings: RunnerSettings, events: Emitter<RunEvent>) {
    this.#settings = settings;
    this.#events = events;
  }

  /**
   * The runner's person (the run route's `ask`), asked after the policy's own handler: an answer given on
   * resume, else a remembered answer, else an answer given to this call earlier in this turn for the same
   * binding, else the runner's handler (which may answer `pending`). Null without a handler: the registry's
   * handler decides. A `pending` answer hands the gate's request to `use.pending`.
   */
  async person(
    run: Run,
    frame: Frame,
    turn: Turn,
    request: ApprovalRequest,
    source: ToolSource,
    use: GrantUse,
  ): Promise<AskOutcome | null> {
    const callId = request.binding.callId;
    const bound: Bound = {
      canonical: request.canonical,
      argsHash: request.binding.argsHash,
      policyVersion: request.binding.policyVersion,
    };
    const granted = frame.granted.get(callId);
    if (granted) return this.#applyGranted(run, frame, granted, request, bound, use);
    const remembered = await this.#recall(run, frame, bound);
    if (remembered) return remembered;
    const earlier = turn.answered?.get(callId);
    const under = underOf(request, source);
    if (earlier && earlier.binding === answerBinding(request) && earlier.under.every((x, i) => x === under[i]))
      return { effect: earlier.effect };
    const handler = this.#settings.handler;
    if (!handler) return null;
    const tool = source.get(request.canonical);
    if (!tool) return { effect: 'invalid', reason: 'the tool is no longer registered' };
    const permission: PermissionRequest = {
      toolName: request.toolName,
      parameters: request.parameters,
      reason: request.reason,
      ruleName: request.rule,
      metadata: tool.metadata,
      callId,
      agent: request.agent,
      tenant: request.tenant,
      runId: request.runId,
      caller: request.caller,
    };
    const given: unknown = await (typeof handler === 'function' ? handler(permission) : handler.handle(permission));
    let answer: unknown = given;
    let scope: ApprovalScope = 'once';
    if (typeof given === 'object' && given !== null) {
      const { answer: a, scope: s } = given as { answer?: unknown; scope?: unknown };
      answer = a;
      if (SCOPES.includes(s as ApprovalScope)) scope = s as ApprovalScope;
      else answer = given; // not an answer: refused as invalid by the gate
    }
    if (answer === 'pending') {
      use.pending(request);
      return { effect: 'pending' };
    }
    if (answer !== 'allow' && answer !== 'deny') return { effect: answer } as unknown as AskOutcome; // the gate refuses it as invalid
    if (scope === 'once') return { effect: answer };
    // Remembered only when the gate takes the answer: one given after handlerTimeoutMs (the call was denied) is not.
    const decided: 'allow' | 'deny' = answer;
    return { effect: answer, settle: () => this.#remember(run, frame, bound, decided, scope) };
  }

  /** Signs a person's answer to a pending approval (AgentRunner.answer): the gate's one `signAnswer`. */
  sign(
    approval: PendingApproval,
    answer: 'allow' | 'deny',
    options: {
      readonly scope?: ApprovalScope;
      readonly arguments?: Readonly<Record<string, unknown>>;
      readonly reason?: string;
    },
  ): ApprovalDecision {
    if (
      typeof approval !== 'object' ||
      approval === null ||
      typeof approval.id !== 'string' ||
      typeof approval.binding !== 'object' ||
      approval.binding === null
    )
      throw new TypeError(`answer(approval): expected a PendingApproval, got ${describe(approval)}`);
    if (answer !== 'allow' && answer !== 'deny')
      throw new TypeError(`answer(approval, answer): answer must be 'allow' or 'deny', got ${describe(answer)}`);
    if (typeof options !== 'object' || options === null)
      throw new TypeError(`answer(): options must be an object, got ${describe(options)}`);
    const scope = options.scope ?? 'once';
    if (!SCOPES.includes(scope))
      throw new TypeError(`answer() option "scope" must be 'once', 'run' or 'session', got ${describe(scope)}`);
    const edited = options.arguments;
    if (edited !== undefined && (typeof edited !== 'object' || edited === null || Array.isArray(edited)))
      throw new TypeError(`answer() option "arguments" must be an object, got ${describe(edited)}`);
    if (edited !== undefined && answer !== 'allow')
      throw new TypeError('answer() option "arguments" goes with an allow, not a deny');
    const reason = options.reason;
    if (reason !== undefined && typeof reason !== 'string')
      throw new TypeError(`answer() option "reason" must be a string, got ${describe(reason)}`);
    return signAnswer(this.#settings.secret, approval, {
      effect: answer,
      remember: scope,
      ...(edited !== undefined ? { arguments: edited } : {}),
      ...(reason !== undefined ? { reason } : {}),
    });
  }

  /**
   * Accepts the signed decisions given on resume: each must answer a pending approval of this state, carry
   * this runner's MAC and not have expired (the gate's one `verifyAnswer`). The accepted ones go to the
   * frame's `granted`; every refused one is reported by an `approval_resolved` event. Nothing is used up
   * here: each approval's nonce is consumed with the ledger claim of its call ({@link useNonce}), so a resume
   * that fails on a store first (a server down) loses no approval.
   */
  async accept(run: Run, pendingList: readonly PendingApproval[], decisions: readonly unknown[]): Promise<void> {
    const pending = new Map(pendingList.map((p) => [p.id, p]));
    const used = new Set<string>();
    for (const given of decisions) {
      const decision = (typeof given === 'object' && given !== null ? given : {}) as Partial<ApprovalDecision>;
      const approval = typeof decision.requestId === 'string' ? pending.get(decision.requestId) : undefined;
      const frame = approval ? frameOf(run, approval) : undefined;
      let problem: string | null = null;
      let answer: Answer | null = null;
      if (!approval || !frame) problem = 'no pending approval of this run matches the decision';
      else if (used.has(approval.id)) problem = 'a decision for this approval was already given';
      else {
        const verified = await verifyAnswer(this.#settings.secret, given, approval, DEFERRED);
        if (verified.effect === 'invalid') problem = verified.reason;
        else answer = verified;
      }
      if (problem !== null || !approval || !frame || answer === null) {
        const effect = decision.answer?.effect;
        this.#refused(run, frame, decision.requestId, approval, effect, problem ?? 'refused');
        continue;
      }
      used.add(approval.id);
      frame.granted.set(approval.binding.callId, { requestId: approval.id, binding: approval.binding, answer });
    }
  }

  /**
   * Accepts the answers an approval store holds for every approval of this state's pause (the inbox: the
   * store's first answer is the person's answer, given by someone its approver check let answer). They are
   * not signed again: the store is trusted for answers, the signed state for what was asked. A request that
   * expired unanswered is a deny that says so.
   */
  acceptStored(run: Run, pendingList: readonly PendingApproval[], records: ReadonlyMap<string, ApprovalRecord>): void {
    for (const approval of pendingList) {
      const frame = frameOf(run, approval);
      const record = records.get(approval.id);
      const answer = record ? storedAnswer(record) : 'no answer was recorded';
      if (!frame || typeof answer === 'string') {
        const problem = typeof answer === 'string' ? answer : 'no pending approval of this run matches the answer';
        this.#refused(run, frame, approval.id, approval, null, problem);
        continue;
      }
      frame.granted.set(approval.binding.callId, { requestId: approval.id, binding: approval.binding, answer });
    }
  }

  /**
   * Uses up the approval given on resume for this call, once its ledger key is this runner's (`key`, just
   * reserved): true when it was unused. When the nonce store cannot be asked, the reservation is given back
   * (the call did not start) and the error goes on: the run fails closed and the approval stays usable.
   */
  async useNonce(granted: GrantedAnswer, key: CallKey): Promise<boolean> {
    const ttl = Math.max(0, Number(granted.binding.expiresAt) - Date.now()) + NONCE_TTL_MS;
    try {
      // Only a boolean answers; anything else is a store error (the claim is given back, the run fails).
      return await consumeNonce(this.#settings.stores.nonces, granted.binding.nonce, ttl);
    } catch (error) {
      await this.#settings.ledger.release(key).catch(() => false);
      throw error;
    }
  }

  /**
   * Reports how an answer given on resume for this call ended (the run route's step 8): used by the
   * runner's person, not needed (the gate decided the call without asking), or not used (the policy in
   * force has its own handler, which decides the ask).
   */
  resolved(run: Run, frame: Frame, callId: string, decision: Decision, use: GrantUse): void {
    const granted = frame.granted.get(callId);
    if (!granted) return;
    const applied = use.applied.get(callId);
    let accepted: boolean;
    let reason: string;
    if (applied !== undefined) {
      accepted = applied.problem === null;
      reason =
        applied.problem ??
        (granted.answer.arguments !== undefined
          ? 'answered with edited arguments'
          : `answered ${granted.answer.effect}`);
    } else if (decision.asked === 'policy') {
      accepted = false;
      reason =
        'the policy in force has its own handler, which decides this ask; the decision given on resume was not used';
    } else {
      accepted = true;
      reason = 'not needed: the gate decided the call without asking';
    }
    emitRun(this.#events, run, frame, {
      type: 'approval_resolved',
      approvalId: granted.requestId,
      callId,
      accepted,
      answer: granted.answer.effect,
      reason,
      decision,
    });
  }

  /** An answer given on resume for a call the ledger had settled already: not used, and reported so. */
  settledElsewhere(run: Run, frame: Frame, callId: string): void {
    const granted = frame.granted.get(callId);
    if (!granted) return;
    emitRun(this.#events, run, frame, {
      type: 'approval_resolved',
      approvalId: granted.requestId,
      callId,
      accepted: false,
      answer: granted.answer.effect,
      reason: 'the call was already settled by another continuation of this run: its recorded outcome is the answer',
      decision: null,
    });
  }

  #refused(
    run: Run,
    frame: Frame | undefined,
    id: unknown,
    approval: PendingApproval | undefined,
    effect: unknown,
    reason: string,
  ): void {
    emitRun(this.#events, run, frame ?? run.frames[run.frames.length - 1]!, {
      type: 'approval_resolved',
      approvalId: typeof id === 'string' ? id : '',
      callId: approval?.binding.callId ?? null,
      accepted: false,
      answer: effect === 'allow' || effect === 'deny' ? effect : null,
      reason,
      decision: null,
    });
  }

  /** An answer given on resume: bound to the call as the gate asks about it now (`sameBinding`), or invalid. */
  async #applyGranted(
    run: Run,
    frame: Frame,
    granted: GrantedAnswer,
    request: ApprovalRequest,
    bound: Bound,
    use: GrantUse,
  ): Promise<AskOutcome> {
    const problem = sameBinding(granted.binding, request.binding);
    use.applied.set(request.binding.callId, { problem });
    if (problem !== null) return { effect: 'invalid', reason: problem };
    const answer = granted.answer;
    if (answer.effect === 'deny')
      return typeof answer.reason === 'string' && answer.reason !== ''
        ? { effect: 'deny', reason: answer.reason }
        : { effect: 'deny' };
    // Edited arguments are a new call: the gate passes it through validation, allowlist and rules again; an
    // `ask` on exactly these arguments is what the approver answered (the answer's MAC, or the store, holds them).
    if (answer.arguments !== undefined) return { effect: 'allow', arguments: answer.arguments };
    await this.#remember(run, frame, bound, 'allow', answer.remember ?? 'once');
    return { effect: 'allow' };
  }

  /** A remembered answer for this call under the run's or the session's scope, if one verifies. */
  async #recall(run: Run, frame: Frame, bound: Bound): Promise<Answer | null> {
    for (const sharing of sharingOf(run)) {
      const key = rememberKey(sharing, run, frame, bound);
      const remembered = await this.#settings.stores.remembered.recall(key);
      if (!remembered) continue;
      if (!sameMac(remembered.mac, this.#rememberedMac(key, remembered.answer, remembered.scope))) continue;
      if (remembered.answer !== 'allow' && remembered.answer !== 'deny') continue;
      return { effect: remembered.answer, recalled: remembered.scope === 'session' ? 'session' : 'run' };
    }
    return null;
  }

  async #remember(run: Run, frame: Frame, bound: Bound, answer: 'allow' | 'deny', scope: ApprovalScope): Promise<void> {
    if (scope === 'once') return;
    // Without a session (a run with no caller id and no `session` option) a session answer lasts for the run.
    const kind = scope === 'session' && run.session !== null ? 'session' : 'run';
    const key = rememberKey({ kind, id: kind === 'session' ? run.session! : run.runId }, run, frame, bound);
    await this.#settings.stores.remembered.remember(key, {
      answer,
      scope: kind,
      mac: this.#rememberedMac(key, answer, kind),
    });
  }

  #rememberedMac(key: string, answer: string, scope: string): string {
    return macOf(this.#settings.secret, ['toolgate.remembered', key, answer, scope]);
  }
}

/**
 * The frame a pending approval of this state belongs to: a pause comes from the innermost frame's phase 1,
 * so it is the innermost frame, and the call is one of its turn's.
 */
function frameOf(run: Run, approval: PendingApproval): Frame | undefined {
  const frame = run.frames[run.frames.length - 1];
  const callId = approval.binding?.callId;
  return frame?.turn?.calls.some((c) => c.id === callId) ? frame : undefined;
}

/** The answer a stored record holds (an expired one: a deny saying it timed out), or what is wrong with it. */
function storedAnswer(record: ApprovalRecord): Answer | string {
  if (record.status === 'expired')
    return {
      effect: 'deny',
      reason: `no approver answered within ${Math.round((record.expiresAt - record.createdAt) / 1000)} s, so the request timed out and was denied`,
      approver: 'toolgate:timeout',
    };
  if (record.status !== 'answered') return 'the approval has not been answered';
  const a = record.answer as Partial<Record<keyof Answer, unknown>> | null;
  if (typeof a !== 'object' || a === null || (a.effect !== 'allow' && a.effect !== 'deny'))
    return `the stored answer is ${describe(a)}, not an answer`;
  if (a.remember !== undefined && !SCOPES.includes(a.remember as ApprovalScope))
    return `the stored answer's remember is ${describe(a.remember)}`;
  if (a.arguments !== undefined && (typeof a.arguments !== 'object' || a.arguments === null || a.effect !== 'allow'))
    return `the stored answer's arguments are ${describe(a.arguments)}`;
  if (a.reason !== undefined && typeof a.reason !== 'string')
    return `the stored answer's reason is ${describe(a.reason)}`;
  return {
    effect: a.effect,
    ...(a.remember !== undefined ? { remember: a.remember as ApprovalScope } : {}),
    ...(a.arguments !== undefined ? { arguments: a.arguments as Readonly<Record<string, unknown>> } : {}),
    ...(a.reason !== undefined ? { reason: a.reason } : {}),
    ...(typeof a.approver === 'string' ? { approver: a.approver } : {}),
  };
}

function sharingOf(run: Run): Sharing[] {
  const all: Sharing[] = [{ kind: 'run', id: run.runId }];
  if (run.session !== null) all.push({ kind: 'session', id: run.session });
  return all;
}

/**
 * The store key of a remembered answer: its scope (kind and id), the tenant and the caller (two tenants or
 * callers may name the same run id or session), for a run its root agent, the agent, tool, arguments and
 * policy version. Keys of the earlier form (no caller for a session, no root agent) are not read.
 */
function rememberKey(sharing: Sharing, run: Run, frame: Frame, bound: Bound): string {
  return canonicalJson([
    'toolgate.remembered/2',
    sharing.kind,
    sharing.id,
    run.tenant,
    run.caller.id,
    sharing.kind === 'run' ? run.root : null,
    frame.agent,
    bound.canonical,
    bound.argsHash,
    bound.policyVersion,
  ]);
}

/** What an answer given in this turn is reused for after a delegation: the same tool, arguments, policy version and rule. */
export function answerBinding(request: {
  readonly canonical: string;
  readonly parameters: unknown;
  readonly rule: string | null;
  readonly binding?: { readonly policyVersion: string | null };
  readonly policyVersion?: string | null;
}): string {
  return hashOf([
    request.canonical,
    request.parameters,
    request.binding?.policyVersion ?? request.policyVersion ?? null,
    request.rule ?? '(fallback)',
  ]);
}

/** The objects an answer given in this turn was given under: the tool, the policy and the registry's handler. */
export function underOf(request: { readonly canonical: string }, source: ToolSource): readonly unknown[] {
  return [source.get(request.canonical), source.getPermissionPolicy(), source.getPermissionHandler()];
}
