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
import type { Decision, DecisionBase } from '../decision.js';
import type { Emitter } from '../events.js';
import { allow, deny, precheck, type GateContext, type GateEnvironment, type Precheck } from '../gate/precheck.js';
import { announceAsk, resolveRunnerAsk } from '../gate/runner-bridge.js';
import { describe } from '../names.js';
import type { PermissionRequest } from '../permissions/handler.js';
import type { Tool } from '../tool.js';
import type { RunnerSettings } from './options.js';
import { emitRun, pathOf, type Frame, type Run, type Turn } from './run.js';
import { canonicalJson, hashOf, macOf, sameMac } from './signing.js';
import type { ApprovalDecision, ApprovalScope, PendingApproval, RunEvent, RunToolCall } from './types.js';

type AskPrecheck = Extract<Precheck, { kind: 'ask' }>;

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

/** A decided ask: the Decision, the tool and the arguments it was decided on. */
export interface Answered {
  readonly decision: Decision;
  readonly tool: Tool | null;
  readonly args: Record<string, unknown> | null;
}

const SCOPES: readonly ApprovalScope[] = ['once', 'run', 'session'];

export class DurableApprovals {
  readonly #settings: RunnerSettings;
  readonly #events: Emitter<RunEvent>;

  constructor(settings: RunnerSettings, events: Emitter<RunEvent>) {
    this.#settings = settings;
    this.#events = events;
  }

  /**
   * Resolves an ask of the policy: a decision given on resume, else a remembered answer, else the
   * handler chain with the runner's handler (which may answer `pending`). The policy's own handler, when
   * the policy in force has one, decides first and nothing stands in for it.
   */
  async ask(
    run: Run,
    frame: Frame,
    turn: Turn,
    call: RunToolCall,
    pre: AskPrecheck,
    context: GateContext,
    env: GateEnvironment,
  ): Promise<Answered | { readonly approval: PendingApproval }> {
    const binding: Binding = {
      runId: run.runId,
      frame: frame.key,
      turn: turn.index,
      callId: call.id,
      canonical: pre.base.canonical,
      argsHash: hashOf(pre.args),
      policyVersion: env.policy?.version ?? null,
    };
    const granted = frame.granted.get(call.id);
    const policyHandler = (env.policy?.handler ?? null) !== null;
    if (granted && !policyHandler) return this.#applyGranted(run, frame, call, pre, granted, binding, context, env);
    if (!policyHandler) {
      const remembered = await this.#recall(run, frame, pre, binding);
      if (remembered) return remembered;
    }

    announceAsk(env, pre);
    let scope: ApprovalScope = 'once';
    const handler = this.#settings.handler;
    const route = handler
      ? async (request: PermissionRequest): Promise<unknown> => {
          const answer: unknown = await (typeof handler === 'function' ? handler(request) : handler.handle(request));
          if (typeof answer === 'object' && answer !== null) {
            const { answer: a, scope: s } = answer as { answer?: unknown; scope?: unknown };
            if ((a !== 'allow' && a !== 'deny') || !SCOPES.includes(s as ApprovalScope)) return answer; // the gate refuses it as invalid
            scope = s as ApprovalScope;
            return a;
          }
          return answer;
        }
      : null;
    const outcome = await resolveRunnerAsk(pre, env, route);
    if (granted) {
      emitRun(this.#events, run, frame, {
        type: 'approval_resolved',
        approvalId: granted.approvalId,
        callId: call.id,
        accepted: false,
        answer: granted.answer,
        reason:
          'the policy in force has its own handler, which decides this ask; the decision given on resume was not used',
        decision: outcome.effect === 'pending' ? null : outcome,
      });
    }
    if (outcome.effect === 'pending') {
      const approval: PendingApproval = Object.freeze({
        id: macOf(this.#settings.secret, ['toolgate.approval', binding]),
        runId: run.runId,
        callId: call.id,
        frame: frame.key,
        turn: turn.index,
        agent: frame.agent,
        path: pathOf(run, frame),
        tool: pre.base.tool,
        canonical: pre.base.canonical,
        parameters: pre.args,
        argsHash: binding.argsHash,
        policyVersion: binding.policyVersion,
        rule: pre.base.rule,
        reason: pre.base.reason,
      });
      return { approval };
    }
    if (outcome.asked === 'runner' && outcome.by === 'handler')
      await this.#remember(run, frame, binding, outcome.effect, scope);
    return { decision: outcome, tool: pre.tool, args: pre.args };
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
   * runner's MAC, be for that call, and have an unused nonce (consumed now, atomically in the store). The
   * accepted ones go to their frame's `granted`; every refused one is reported by an `approval_resolved` event.
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
      else if (!(await this.#settings.store.consume(String(decision.nonce))))
        problem = 'the decision was already used (replayed)';
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

  /** Reports that a decision given on resume was not needed: the gate decided the call without asking. */
  unneeded(run: Run, frame: Frame, call: RunToolCall, decision: Decision): void {
    const granted = frame.granted.get(call.id);
    if (!granted) return;
    emitRun(this.#events, run, frame, {
      type: 'approval_resolved',
      approvalId: granted.approvalId,
      callId: call.id,
      accepted: true,
      answer: granted.answer,
      reason: 'not needed: the gate decided the call without asking',
      decision,
    });
  }

  /** A decision given on resume: bound to this call's tool, arguments and policy version, or refused. */
  async #applyGranted(
    run: Run,
    frame: Frame,
    call: RunToolCall,
    pre: AskPrecheck,
    granted: ApprovalDecision,
    binding: Binding,
    context: GateContext,
    env: GateEnvironment,
  ): Promise<Answered> {
    const base: DecisionBase = { ...pre.base, asked: 'runner' };
    let problem: string | null = null;
    if (granted.canonical !== binding.canonical) problem = 'the approval was given for another tool';
    else if (granted.argsHash !== binding.argsHash) problem = 'the approval was given for other arguments';
    else if (granted.policyVersion !== binding.policyVersion)
      problem = `the approval was given under policy version ${JSON.stringify(granted.policyVersion)} and ${JSON.stringify(binding.policyVersion)} is in force`;
    let outcome: Answered;
    if (problem !== null) {
      outcome = {
        decision: deny(
          base,
          { stage: 'handler', by: 'handler_invalid', layer: null },
          `${pre.base.reason}; ${problem}, so the call is denied`,
        ),
        tool: pre.tool,
        args: pre.args,
      };
    } else if (granted.answer === 'deny') {
      outcome = {
        decision: deny(
          base,
          { stage: 'handler', by: 'handler', layer: null },
          typeof granted.reason === 'string' && granted.reason !== ''
            ? `${pre.base.reason}; the approver denied the call: ${granted.reason}`
            : `${pre.base.reason}; the approver denied the call`,
        ),
        tool: pre.tool,
        args: pre.args,
      };
    } else if (granted.arguments !== null) {
      // Edited arguments are a new call: validation, allowlist and rules again. An `ask` on exactly these
      // arguments is what the approver answered (the decision's MAC covers them).
      const edited = await precheck(
        { id: call.id, name: call.name, arguments: granted.arguments, format: 'toolgate' },
        context,
        env,
      );
      outcome =
        edited.kind === 'decided'
          ? edited
          : {
              decision: allow(
                { ...edited.base, asked: 'runner' },
                'handler',
                `${edited.base.reason} (approved with edited arguments)`,
              ),
              tool: edited.tool,
              args: edited.args,
            };
    } else {
      outcome = { decision: allow(base, 'handler', `${pre.base.reason} (approved)`), tool: pre.tool, args: pre.args };
    }
    if (problem === null && granted.arguments === null)
      await this.#remember(run, frame, binding, granted.answer, granted.scope);
    emitRun(this.#events, run, frame, {
      type: 'approval_resolved',
      approvalId: granted.approvalId,
      callId: call.id,
      accepted: problem === null,
      answer: granted.answer,
      reason: problem ?? (granted.arguments !== null ? 'answered with edited arguments' : `answered ${granted.answer}`),
      decision: outcome.decision,
    });
    return outcome;
  }

  /** A remembered answer for this call under the run's or the session's scope, if one verifies. */
  async #recall(run: Run, frame: Frame, pre: AskPrecheck, binding: Binding): Promise<Answered | null> {
    for (const scope of scopesOf(run)) {
      const key = rememberKey(scope, run, frame, binding);
      const remembered = await this.#settings.store.recall(key);
      if (!remembered) continue;
      if (!sameMac(remembered.mac, this.#rememberedMac(key, remembered.answer, remembered.scope))) continue;
      const base: DecisionBase = { ...pre.base, asked: 'runner' };
      const decision =
        remembered.answer === 'allow'
          ? allow(base, 'handler', `${pre.base.reason} (approved earlier for this ${remembered.scope})`)
          : deny(
              base,
              { stage: 'handler', by: 'handler', layer: null },
              `${pre.base.reason}; the approver denied it earlier for this ${remembered.scope}`,
            );
      return { decision, tool: pre.tool, args: pre.args };
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
    await this.#settings.store.remember(key, { answer, scope: kind, mac: this.#rememberedMac(key, answer, kind) });
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

/** The store key of a remembered answer: its scope (kind and id), the tenant, agent, tool, arguments and policy version. */
function rememberKey(scope: RememberScope, run: Run, frame: Frame, binding: Binding): string {
  return canonicalJson([
    'toolgate.remembered',
    scope.kind,
    scope.id,
    run.tenant,
    frame.agent,
    binding.canonical,
    binding.argsHash,
    binding.policyVersion,
  ]);
}
