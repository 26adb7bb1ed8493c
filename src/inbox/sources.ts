/**
 * Where pending approvals come from: paused AgentRunner runs (resumed once every approval of the pause is
 * answered) and the registry's handler route (a PermissionHandler that waits for the inbox's answer).
 */
import { randomUUID } from 'node:crypto';
import { canonical as canonicalName } from '../names.js';
import type { PermissionHandler, PermissionRequest } from '../permissions/handler.js';
import { bindingOf } from '../gate/index.js';
import type { ToolRegistry } from '../registry.js';
import type { AgentRunner } from '../runner/runner.js';
import type { PendingApproval, ResumeOptions, RunResult, RunState } from '../runner/types.js';
import type { ApprovalSink, SubmittedApproval } from './queue.js';
import type { PendingRecord } from '../stores/types.js';

/** Options of {@link RunnerInbox}. */
export interface RunnerInboxOptions {
  /** The runner's registry: each approval then carries the policy's explain trace. @default no trace */
  readonly registry?: ToolRegistry;
  /** How long a run's approvals wait before they time out to deny. @default the inbox's `ttlMs` */
  readonly ttlMs?: number;
  /** What to pass to `resume` (the caller's current scopes, the agent as declared now). @default {} */
  readonly resumeOptions?: (state: RunState) => ResumeOptions;
}

/** A tracked run: `done` resolves with its result once it no longer waits for anyone. */
export interface TrackedRun {
  readonly runId: string;
  readonly done: Promise<RunResult>;
}

/** The explain trace of an approval: the allowlist layers it passed and every rule of the policy. */
export function traceOf(
  registry: ToolRegistry | undefined,
  canonical: string,
  parameters: Readonly<Record<string, unknown>>,
): unknown {
  if (!registry) return undefined;
  try {
    const tool = registry.get(canonical);
    const policy = registry.getPermissionPolicy();
    if (!tool || !policy) return undefined;
    const evaluation = policy.evaluate(tool, parameters, { trace: true });
    return {
      allowlist: 'passed every layer (agent, tenant, caller)',
      decidedBy: evaluation.rule ? `rule ${evaluation.rule.name}` : evaluation.by,
      result: evaluation.result,
      rules: evaluation.trace ?? [],
      policyVersion: policy.version ?? null,
    };
  } catch {
    return undefined;
  }
}

/**
 * Puts a paused run's approvals in the inbox, each stored with the run's signed state (`paused`), and resumes
 * the run (once, with every answer of the pause) when the last one is answered; a run that pauses again is
 * tracked again. The answers are applied as the store holds them (`runner.resumeAnswered`: not signed again,
 * no second nonce); the edited call passes the whole gate again. A process that did not track the run
 * resumes it too once it adopts one of its stored approvals ({@link RunnerInbox.adopt}).
 */
export class RunnerInbox {
  readonly #inbox: ApprovalSink;
  readonly #runner: AgentRunner;
  readonly #options: RunnerInboxOptions;
  readonly #tracked = new Set<string>();

  constructor(inbox: ApprovalSink, runner: AgentRunner, options: RunnerInboxOptions = {}) {
    this.#inbox = inbox;
    this.#runner = runner;
    this.#options = options;
    runner.on('approval_resolved', (event) => {
      if (!this.#tracked.has(event.approvalId)) return;
      const decision = event.decision;
      this.#inbox.reportOutcome(event.approvalId, {
        effect: decision?.effect ?? 'deny',
        text: decision?.reason ?? event.reason,
      });
    });
  }

  /** Tracks `result`: a paused run's approvals go to the inbox; resolves once they are stored. */
  async track(result: RunResult): Promise<TrackedRun> {
    const { done, resolve, reject } = settled();
    if (result.status !== 'paused') resolve(result);
    else await this.#pause(result, resolve, reject);
    return { runId: result.runId, done };
  }

  /**
   * Tracks the run a stored approval belongs to (one paused in another process, found in the shared store):
   * this process resumes it once every approval of its pause is answered. Null for an approval that is not a
   * paused run's, or whose run this process tracks already.
   */
  async adopt(record: PendingRecord): Promise<TrackedRun | null> {
    const paused = record.source === 'runner' ? record.paused : null;
    const state = paused?.state as RunState | undefined;
    if (!paused || !state || !Array.isArray(state.pending) || this.#tracked.has(record.id)) return null;
    const { done, resolve, reject } = settled();
    await this.#pause({ runId: paused.runId, state, pending: state.pending }, resolve, reject);
    return { runId: paused.runId, done };
  }

  async #pause(
    result:
      | Extract<RunResult, { status: 'paused' }>
      | Pick<Extract<RunResult, { status: 'paused' }>, 'runId' | 'state' | 'pending'>,
    resolve: (result: RunResult) => void,
    reject: (error: unknown) => void,
  ): Promise<void> {
    const pending = result.pending;
    // The same call waiting again after its answer was given means the runner did not take the answer
    // (a policy handler of its own, say): it is not answered twice; the run stays paused.
    if (pending.some((p) => this.#tracked.has(p.id))) {
      if ('status' in result) resolve(result);
      return;
    }
    const answers = new Map<string, PendingRecord>();
    const state = result.state;
    const paused = { runId: result.runId, state, approvals: pending.map((p) => p.id) };
    const limit = this.#inbox.now() + (this.#options.ttlMs ?? this.#inbox.ttlMs);
    for (const p of pending) {
      this.#tracked.add(p.id);
      const trace = traceOf(this.#options.registry, p.canonical, p.parameters);
      const approval: SubmittedApproval = {
        ...p,
        ...(trace !== undefined ? { trace } : {}),
        source: 'runner',
        expiresAt: Math.min(p.binding.expiresAt, limit),
        paused,
      };
      await this.#inbox.submit(approval, (record) => {
        answers.set(p.id, record);
        if (answers.size === pending.length) void this.#resume(state, pending, answers, resolve, reject);
      });
    }
  }

  async #resume(
    state: RunState,
    pending: readonly PendingApproval[],
    answers: ReadonlyMap<string, PendingRecord>,
    resolve: (result: RunResult) => void,
    reject: (error: unknown) => void,
  ): Promise<void> {
    try {
      const records = pending.map((p) => answers.get(p.id)!);
      const next = await this.#runner.resumeAnswered(records, this.#options.resumeOptions?.(state) ?? {});
      if (next.status === 'paused') await this.#pause(next, resolve, reject);
      else resolve(next);
    } catch (error) {
      // The answers were given but the run could not go on: their cards say so.
      const text = `the run could not be resumed: ${error instanceof Error ? error.message : String(error)}`;
      for (const p of pending) this.#inbox.reportOutcome(p.id, { effect: 'error', text });
      reject(error);
    }
  }
}

function settled(): {
  done: Promise<RunResult>;
  resolve: (result: RunResult) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (result: RunResult) => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<RunResult>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  done.catch(() => undefined);
  return { done, resolve, reject };
}

/** Options of {@link inboxHandler}. */
export interface InboxHandlerOptions {
  /** The registry whose policy gives the explain trace. @default no trace */
  readonly registry?: ToolRegistry;
  /**
   * How long a call waits for a person. Keep it below the registry's `handlerTimeoutMs`, which denies
   * first otherwise. @default the inbox's `ttlMs`
   */
  readonly ttlMs?: number;
}

/**
 * A PermissionHandler for a ToolRegistry: each ask is put in the inbox and the call waits for the answer
 * (allow / deny; a time-out denies). Only `once` answers without edits fit this route.
 */
export function inboxHandler(inbox: ApprovalSink, options: InboxHandlerOptions = {}): PermissionHandler {
  return async (request: PermissionRequest) => {
    const id = `registry:${randomUUID()}`;
    const canonical = canonicalName(request.toolName);
    const ttl = options.ttlMs ?? inbox.ttlMs;
    const policyVersion = options.registry?.getPermissionPolicy()?.version ?? null;
    const trace = traceOf(options.registry, request.toolName, request.parameters);
    const expiresAt = inbox.now() + ttl;
    const answered = new Promise<PendingRecord>((resolve, reject) => {
      inbox
        .submit(
          {
            id,
            kind: 'tool',
            binding: bindingOf(
              {
                owner: { kind: 'run', id: request.runId ?? id },
                agent: request.agent,
                callId: request.callId,
                tool: canonical,
                args: request.parameters,
                rule: request.ruleName,
                policyVersion,
                caller: request.caller ?? null,
                tenant: request.tenant,
                ttlMs: ttl,
              },
              expiresAt - ttl,
            ),
            toolName: request.toolName,
            canonical,
            parameters: request.parameters,
            agent: request.agent,
            tenant: request.tenant,
            // The asker, so that four eyes applies to this route too.
            caller: request.caller ?? null,
            runId: request.runId,
            rule: request.ruleName,
            reason: request.reason,
            ...(trace !== undefined ? { trace } : {}),
            source: 'registry',
            expiresAt,
          },
          resolve,
        )
        .catch(reject);
    });
    const record = await answered;
    return record.answer?.effect === 'allow' && record.answer.arguments === undefined ? 'allow' : 'deny';
  };
}
