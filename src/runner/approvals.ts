/**
 * Durable approvals: how the runner puts an `ask` to a person (its handler, which may answer `pending`),
 * remembers answers for a run or a session, signs the answers given while a run is paused, and accepts
 * them on resume only for exactly the call they answered.
 *
 * Bindings (contract: ApprovalBinding). A pending approval's id is an HMAC over the run, frame, turn, call,
 * canonical tool, the SHA-256 of the canonical validated arguments and the policy version. A remembered
 * answer is stored under `[kind, id]` with kind `run` (the run id) or `session` (the session id), so a
 * caller named `run:R1` can never read what run R1 remembered.
 */
import { randomUUID } from 'node:crypto';
import type { Decision } from '../decision.js';
import type { Emitter } from '../events.js';
import type { Answer, ApprovalRequest, AskOutcome } from '../gate/approval.js';
import type { GateEnvironment } from '../gate/precheck.js';
import { describe } from '../names.js';
import type { PermissionRequest } from '../permissions/handler.js';
import type { RunnerSettings } from './options.js';
import { emitRun, pathOf, type Frame, type Run, type Turn } from './run.js';
import { canonicalJson, hashOf, macOf, sameMac } from '../crypto.js';
import type { ApprovalDecision, ApprovalScope, PendingApproval, RunEvent } from './types.js';

/**
 * What the run route learns from the runner's person for one dispatch: the decisions given on resume it
 * applied (and what was wrong with them), and the PendingApproval of each call left pending.
 */
export interface GrantUse {
  readonly applied: Map<string, { readonly problem: string | null }>;
  pending(approval: PendingApproval): void;
}

/** What one call's approval is bound to. */
interface Binding {
  readonly runId: string;
  readonly frame: string;
  readonly turn: number;
  readonly callId: string;
  readonly canonical: string;
  readonly argsHash: string;
  readonly policyVersion: string | null;
}

/** Who a remembered answer is shared with: one run, or one session. Two kinds, so their ids never collide. */
interface RememberScope {
  readonly kind: 'run' | 'session';
  readonly id: string;
}

const SCOPES: readonly ApprovalScope[] = ['once', 'run', 'session'];
/** How long a used decision nonce is remembered. */
const NONCE_TTL_MS = 30 * 86_400_000;

export class DurableApprovals {
  readonly #settings: RunnerSettings;
  readonly #events: Emitter<RunEvent>;

  constructor(settings: RunnerSettings, events: Emitter<RunEvent>) {
    this.#settings = settings;
    this.#events = events;
  }

  /**
   * The runner's person (the run route's `ask`), asked after the policy's own handler: a decision given on
   * resume, else a remembered answer, else an answer given to this call earlier in this turn for the same
   * binding, else the runner's handler (which may answer `pending`). Null without a handler: the registry's
   * handler decides. `onPending` receives the PendingApproval a `pending` answer stands for.
   */
  async person(
    run: Run,
    frame: Frame,
    turn: Turn,
    request: ApprovalRequest,
    env: GateEnvironment,
    use: GrantUse,
  ): Promise<AskOutcome | null> {
    const callId = request.binding.callId;
    const binding: Binding = {
      runId: run.runId,
      frame: frame.key,
      turn: turn.index,
      callId,
      canonical: request.canonical,
      argsHash: request.binding.argsHash,
      policyVersion: request.binding.policyVersion,
    };
    const granted = frame.granted.get(callId);
    if (granted) return this.#applyGranted(run, frame, granted, binding, use);
    const remembered = await this.#recall(run, frame, binding);
    if (remembered) return remembered;
    const earlier = turn.answered.get(callId);
    const under = underOf(request, env);
    if (earlier && earlier.binding === answerBinding(request) && earlier.under.every((x, i) => x === under[i]))
      return { effect: earlier.effect };
    const handler = this.#settings.handler;
    if (!handler) return null;
    const tool = env.lookup(request.canonical);
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
      use.pending(
        Object.freeze({
          id: macOf(this.#settings.secret, ['toolgate.approval', binding]),
          runId: run.runId,
          callId,
          frame: frame.key,
          turn: turn.index,
          agent: frame.agent,
          path: pathOf(run, frame),
          tool: request.toolName,
          canonical: request.canonical,
          parameters: request.parameters,
          argsHash: binding.argsHash,
          policyVersion: binding.policyVersion,
          rule: request.rule === '(fallback)' ? null : request.rule,
          reason: request.reason,
        }),
      );
      return { effect: 'pending' };
    }
    if (answer !== 'allow' && answer !== 'deny') return { effect: answer } as unknown as AskOutcome; // the gate refuses it as invalid
    if (scope === 'once') return { effect: answer };
    // Remembered only when the gate takes the answer: one given after handlerTimeoutMs (the call was denied) is not.
    const decided: 'allow' | 'deny' = answer;
    return { effect: answer, settle: () => this.#remember(run, frame, binding, decided, scope) };
  }

  /** Signs a person's answer to a pending approval (AgentRunner.answer). */
  sign(
    approval: PendingApproval,
    answer: 'allow' | 'deny',
    options: {
      readonly scope?: ApprovalScope;
      readonly arguments?: Readonly<Record<string, unknown>>;
      readonly reason?: string;
    },
  ): ApprovalDecision {
    if (typeof approval !== 'object' || approval === null || typeof approval.id !== 'string')
      throw new TypeError(`answer(approval): expected a PendingApproval, got ${describe(approval)}`);
    if (answer !== 'allow' && answer !== 'deny')
      throw new TypeError(`answer(approval, answer): answer must be 'allow' or 'deny', got ${describe(answer)}`);
    if (typeof options !== 'object' || options === null)
      throw new TypeError(`answer(): options must be an object, got ${describe(options)}`);
    const scope = options.scope ?? 'once';
    if (!SCOPES.includes(scope))
      throw new TypeError(`answer() option "scope" must be 'once', 'run' or 'session', got ${describe(scope)}`);
    const edited = options.arguments ?? null;
    if (edited !== null && (typeof edited !== 'object' || Array.isArray(edited)))
      throw new TypeError(`answer() option "arguments" must be an object, got ${describe(edited)}`);
    const reason = options.reason ?? null;
    if (reason !== null && typeof reason !== 'string')
      throw new TypeError(`answer() option "reason" must be a string, got ${describe(reason)}`);
    const fields = {
      approvalId: approval.id,
      runId: approval.runId,
      callId: approval.callId,
      canonical: approval.canonical,
      argsHash: approval.argsHash,
      policyVersion: approval.policyVersion,
      answer,
      scope,
      arguments: edited === null ? null : (JSON.parse(JSON.stringify(edited)) as Record<string, unknown>),
      reason,
      nonce: randomUUID(),
    };
    return Object.freeze({ ...fields, mac: macOf(this.#settings.secret, ['toolgate.decision', fields]) });
  }

  /**
   * Accepts the decisions given on resume: each must answer a pending approval of this state, carry this
   * runner's MAC and be for that call. The accepted ones go to their frame's `granted`; every refused one is
   * reported by an `approval_resolved` event. Nothing is used up here: a decision's nonce is consumed with
   * the ledger claim of its call ({@link useNonce}), so a resume that fails on a store first loses nothing.
   */
  async accept(run: Run, pendingList: readonly PendingApproval[], decisions: readonly unknown[]): Promise<void> {
    const pending = new Map(pendingList.map((p) => [p.id, p]));
    const used = new Set<string>();
    for (const given of decisions) {
      const decision = (typeof given === 'object' && given !== null ? given : {}) as Partial<ApprovalDecision>;
      const approval = typeof decision.approvalId === 'string' ? pending.get(decision.approvalId) : undefined;
      const frame = approval ? run.frames.find((f) => f.key === approval.frame) : undefined;
      let problem: string | null = null;
      if (!approval || !frame) problem = 'no pending approval of this run matches the decision';
      else if (!sameMac(decision.mac, this.#decisionMac(decision)))
        problem = 'the decision is not signed by this runner or was altered';
      else if (decision.runId !== approval.runId || decision.callId !== approval.callId)
        problem = 'the decision is for another call';
      else if (used.has(approval.id)) problem = 'a decision for this approval was already given';
      if (problem !== null || !approval || !frame) {
        emitRun(this.#events, run, approval && frame ? frame : run.frames[run.frames.length - 1]!, {
          type: 'approval_resolved',
          approvalId: typeof decision.approvalId === 'string' ? decision.approvalId : '',
          callId: approval?.callId ?? null,
          accepted: false,
          answer: decision.answer === 'allow' || decision.answer === 'deny' ? decision.answer : null,
          reason: problem ?? 'refused',
          decision: null,
        });
        continue;
      }
      used.add(approval.id);
      frame.granted.set(approval.callId, decision as ApprovalDecision);
    }
  }

  /**
   * Reports how a decision given on resume for this call ended (the run route's step 8): used by the
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
        (granted.arguments !== null ? 'answered with edited arguments' : `answered ${granted.answer}`);
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
      approvalId: granted.approvalId,
      callId,
      accepted,
      answer: granted.answer,
      reason,
      decision,
    });
  }

  /** A decision given on resume for a call the ledger had settled already: not used, and reported so. */
  settledElsewhere(run: Run, frame: Frame, callId: string): void {
    const granted = frame.granted.get(callId);
    if (!granted) return;
    emitRun(this.#events, run, frame, {
      type: 'approval_resolved',
      approvalId: granted.approvalId,
      callId,
      accepted: false,
      answer: granted.answer,
      reason: 'the call was already settled by another continuation of this run: its recorded outcome is the answer',
      decision: null,
    });
  }

  /** A decision given on resume: bound to this call's tool, arguments and policy version, or refused as invalid. */
  async #applyGranted(
    run: Run,
    frame: Frame,
    granted: ApprovalDecision,
    binding: Binding,
    use: GrantUse,
  ): Promise<AskOutcome> {
    let problem: string | null = null;
    if (granted.canonical !== binding.canonical) problem = 'the approval was given for another tool';
    else if (granted.argsHash !== binding.argsHash) problem = 'the approval was given for other arguments';
    else if (granted.policyVersion !== binding.policyVersion)
      problem = `the approval was given under policy version ${JSON.stringify(granted.policyVersion)} and ${JSON.stringify(binding.policyVersion)} is in force`;
    use.applied.set(binding.callId, { problem });
    if (problem !== null) return { effect: 'invalid', reason: problem };
    if (granted.answer === 'deny')
      return typeof granted.reason === 'string' && granted.reason !== ''
        ? { effect: 'deny', reason: granted.reason }
        : { effect: 'deny' };
    // Edited arguments are a new call: the gate passes it through validation, allowlist and rules again; an
    // `ask` on exactly these arguments is what the approver answered (the decision's MAC covers them).
    if (granted.arguments !== null) return { effect: 'allow', arguments: granted.arguments };
    await this.#remember(run, frame, binding, granted.answer, granted.scope);
    return { effect: 'allow' };
  }

  /** A remembered answer for this call under the run's or the session's scope, if one verifies. */
  async #recall(run: Run, frame: Frame, binding: Binding): Promise<Answer | null> {
    for (const scope of scopesOf(run)) {
      const key = rememberKey(scope, run, frame, binding);
      const remembered = await this.#settings.stores.remembered.recall(key);
      if (!remembered) continue;
      if (!sameMac(remembered.mac, this.#rememberedMac(key, remembered.answer, remembered.scope))) continue;
      if (remembered.answer !== 'allow' && remembered.answer !== 'deny') continue;
      return { effect: remembered.answer, recalled: remembered.scope === 'session' ? 'session' : 'run' };
    }
    return null;
  }

  async #remember(
    run: Run,
    frame: Frame,
    binding: Binding,
    answer: 'allow' | 'deny',
    scope: ApprovalScope,
  ): Promise<void> {
    if (scope === 'once') return;
    // Without a session (a run with no caller id and no `session` option) a session answer lasts for the run.
    const kind = scope === 'session' && run.session !== null ? 'session' : 'run';
    const key = rememberKey({ kind, id: kind === 'session' ? run.session! : run.runId }, run, frame, binding);
    await this.#settings.stores.remembered.remember(key, {
      answer,
      scope: kind,
      mac: this.#rememberedMac(key, answer, kind),
    });
  }

  /**
   * Uses up the decision given on resume for this call, once its ledger key is this runner's (`key`, just
   * reserved): true when it was unused. When the nonce store cannot be asked, the reservation is given back
   * (the call did not start) and the error goes on: the run fails closed and the decision stays usable.
   */
  async useNonce(granted: ApprovalDecision, key: string): Promise<boolean> {
    try {
      return await this.#settings.stores.nonces.consume(String(granted.nonce), NONCE_TTL_MS);
    } catch (error) {
      await this.#settings.ledger.release(key).catch(() => false);
      throw error;
    }
  }

  #rememberedMac(key: string, answer: string, scope: string): string {
    return macOf(this.#settings.secret, ['toolgate.remembered', key, answer, scope]);
  }

  #decisionMac(decision: Partial<ApprovalDecision>): string {
    const { approvalId, runId, callId, canonical: form, argsHash, policyVersion, answer, scope, nonce } = decision;
    try {
      return macOf(this.#settings.secret, [
        'toolgate.decision',
        {
          approvalId,
          runId,
          callId,
          canonical: form,
          argsHash,
          policyVersion,
          answer,
          scope,
          arguments: decision.arguments,
          reason: decision.reason ?? null,
          nonce,
        },
      ]);
    } catch {
      return '';
    }
  }
}

function scopesOf(run: Run): RememberScope[] {
  const scopes: RememberScope[] = [{ kind: 'run', id: run.runId }];
  if (run.session !== null) scopes.push({ kind: 'session', id: run.session });
  return scopes;
}

/**
 * The store key of a remembered answer: its scope (kind and id), the tenant, for a run the caller (two callers
 * may name the same run id), the agent, tool, arguments and policy version.
 */
function rememberKey(scope: RememberScope, run: Run, frame: Frame, binding: Binding): string {
  return canonicalJson([
    'toolgate.remembered',
    scope.kind,
    scope.id,
    run.tenant,
    scope.kind === 'run' ? run.caller.id : null,
    frame.agent,
    binding.canonical,
    binding.argsHash,
    binding.policyVersion,
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
export function underOf(request: { readonly canonical: string }, env: GateEnvironment): readonly unknown[] {
  return [env.lookup(request.canonical), env.policy, env.handler];
}
