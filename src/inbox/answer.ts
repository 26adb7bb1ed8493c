/**
 * Who may see and answer what, and the answer itself. Every read of a request on behalf of an approver
 * goes through {@link Answering.find} or {@link Answering.visible}, which ask THE approver check
 * (`gate/approvers.ts`) first: a request the approver may not see is not found (404), and nothing about it
 * is said — not its arguments, not that it was answered, not by whom.
 *
 * An answer counts when the store's atomic `answer()` takes it (the first answer wins across every tab and
 * replica); only then is `approval_answered` written to the audit log. Every refused answer is written as
 * `approval_answer_refused`, with why.
 */
import type { ApproverIdentity, ApproverVerdict } from '../contracts/approval.js';
import { approverVerdict } from '../gate/index.js';
import { describe } from '../names.js';
import { canonicalJson } from '../crypto.js';
import type { Answer, PendingRecord } from '../stores/types.js';
import { parseJsonText } from '../json-text.js';
import { writeAudit, type InboxContext, type InboxIdentity } from './context.js';
import type { ApprovalQueue } from './queue.js';

export const STATUS = {
  ok: 200,
  bad: 400,
  unauthorized: 401,
  forbidden: 403,
  missing: 404,
  conflict: 409,
  gone: 410,
} as const;
export type Status = (typeof STATUS)[keyof typeof STATUS] | 500;

/** How an answer ended, for the page (or the script) that sent it. */
export interface Outcome {
  readonly status: Status;
  readonly title: string;
  readonly detail: string;
}

const MAX_REASON = 2000;
const MAX_ARGUMENTS = 100_000;

/** Edited arguments from a form: a JSON object, or why not. */
export function parseArguments(raw: string): Record<string, unknown> | string {
  if (raw.length > MAX_ARGUMENTS) return `The arguments are longer than ${MAX_ARGUMENTS} characters.`;
  let value: unknown;
  try {
    value = parseJsonText(raw);
  } catch (error) {
    return `The arguments are not valid JSON: ${error instanceof Error ? error.message : describe(error)}.`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return 'The arguments must be a JSON object.';
  return value as Record<string, unknown>;
}

const NOT_FOUND: Outcome = {
  status: STATUS.missing,
  title: 'No such approval',
  detail: 'There is no approval with this id.',
};

export class Answering {
  readonly #ctx: InboxContext;
  readonly #queue: ApprovalQueue;

  constructor(ctx: InboxContext, queue: ApprovalQueue) {
    this.#ctx = ctx;
    this.#queue = queue;
  }

  /** THE approver check for `record` now (escalated rules once its reminder is due). */
  verdict(who: ApproverIdentity, record: PendingRecord): ApproverVerdict {
    return approverVerdict(this.#queue.rulesFor(record), who, record);
  }

  /** The request, when `who` may see it; undefined when there is none or it is hidden from them. */
  async find(who: ApproverIdentity, id: string): Promise<PendingRecord | undefined> {
    const record = await this.#ctx.store.get(id);
    if (!record) return undefined;
    const verdict = this.verdict(who, record);
    return !verdict.may && verdict.hidden ? undefined : record;
  }

  /** Every request `who` may see. */
  async visible(who: ApproverIdentity): Promise<PendingRecord[]> {
    return (await this.#ctx.store.list()).filter((r) => {
      const verdict = this.verdict(who, r);
      return verdict.may || !verdict.hidden;
    });
  }

  /**
   * Answers `id` as `who` from a form (`effect`, `reason`, `remember`, `arguments`); `onlyEffect`: a link
   * that may give one answer only.
   */
  async answer(
    id: string,
    who: InboxIdentity,
    form: Readonly<Record<string, unknown>>,
    onlyEffect: 'allow' | 'deny' | null,
  ): Promise<Outcome> {
    const record = await this.#ctx.store.get(id);
    const tried: Answer = { effect: form['effect'] === 'allow' ? 'allow' : 'deny', approver: who.id };
    const refuse = async (outcome: Outcome): Promise<Outcome> => {
      await writeAudit(this.#ctx, 'approval_answer_refused', id, record, tried, who.via, outcome.detail).catch(
        () => undefined,
      );
      return outcome;
    };
    const no = (status: Status, title: string, detail: string) => refuse({ status, title, detail });
    // Who may see it comes first: to anyone else it does not exist, whatever state it is in.
    if (!record) return refuse(NOT_FOUND);
    const verdict = this.verdict(who, record);
    if (!verdict.may && verdict.hidden) return refuse(NOT_FOUND);
    if (record.status === 'expired' || (record.status === 'pending' && record.expiresAt <= this.#ctx.now()))
      return no(STATUS.gone, 'Expired', 'This approval expired; it is denied and the model is told so.');
    if (record.status !== 'pending') {
      const by = record.answer?.approver ? ` by ${record.answer.approver}` : '';
      return no(
        STATUS.conflict,
        'Already answered',
        `This approval was already answered${by} (${record.answer?.effect ?? record.status}); nothing more runs.`,
      );
    }
    if (this.#ctx.policyVersion) {
      const now = this.#ctx.policyVersion() ?? null;
      if (now !== record.binding.policyVersion)
        return no(
          STATUS.conflict,
          'Policy changed',
          `The policy changed since this was asked (asked under ${JSON.stringify(record.binding.policyVersion)}, now ${JSON.stringify(now)}); the answer is refused.`,
        );
    }
    if (!verdict.may) return no(STATUS.forbidden, 'Not allowed', verdict.reason);
    const effect = form['effect'];
    if (effect !== 'allow' && effect !== 'deny')
      return no(STATUS.bad, 'Bad answer', 'The answer must be "allow" or "deny".');
    if (onlyEffect !== null && effect !== onlyEffect)
      return no(STATUS.forbidden, 'Not allowed', `This link can only ${onlyEffect === 'allow' ? 'approve' : 'deny'}.`);
    const remember = form['remember'] ?? 'once';
    if (remember !== 'once' && remember !== 'run' && remember !== 'session')
      return no(STATUS.bad, 'Bad answer', 'Remember must be "once", "run" or "session".');
    if (remember !== 'once' && record.source !== 'runner')
      return no(STATUS.bad, 'Bad answer', `A ${record.source} approval can only be answered once.`);
    const reasonText = typeof form['reason'] === 'string' ? form['reason'].trim() : '';
    if (reasonText.length > MAX_REASON)
      return no(STATUS.bad, 'Bad answer', `The reason is longer than ${MAX_REASON} characters.`);
    let edited: Record<string, unknown> | undefined;
    const rawArgs = form['arguments'];
    if (typeof rawArgs === 'string' && rawArgs.trim() !== '') {
      const parsed = parseArguments(rawArgs);
      if (typeof parsed === 'string') return no(STATUS.bad, 'Bad arguments', parsed);
      if (canonicalJson(parsed) !== canonicalJson(record.parameters)) edited = parsed;
    }
    if (edited !== undefined && effect !== 'allow')
      return no(STATUS.bad, 'Bad answer', 'Edited arguments go with an approval, not a deny.');
    if (edited !== undefined && record.source === 'registry')
      return no(STATUS.bad, 'Bad answer', `A ${record.source} approval cannot be answered with edited arguments.`);
    if (edited !== undefined && record.kind !== 'tool')
      return no(
        STATUS.bad,
        'Bad answer',
        `A ${record.kind} approval is answered as asked: it has no arguments to edit.`,
      );
    const answer: Answer = {
      effect,
      remember,
      approver: who.id,
      ...(reasonText !== '' ? { reason: reasonText } : {}),
      ...(edited !== undefined ? { arguments: edited } : {}),
    };
    if (!(await this.#ctx.store.answer(id, answer))) {
      const now = await this.#ctx.store.get(id).catch(() => undefined);
      if (now?.status === 'expired')
        return no(STATUS.gone, 'Expired', 'This approval expired; it is denied and the model is told so.');
      return no(STATUS.conflict, 'Already answered', 'Someone answered this approval first; nothing more runs.');
    }
    // Written once the store took the answer: of two approvers answering at once, only the one whose answer
    // counts is recorded as answering.
    let recorded: string | null = null;
    try {
      await writeAudit(this.#ctx, 'approval_answered', id, record, answer, who.via);
    } catch (error) {
      recorded = error instanceof Error ? error.message : describe(error);
    }
    this.#queue.notify('approval.answered', { ...record, status: 'answered', answer });
    this.#queue.changed(id);
    await this.#queue.settle(id);
    if (recorded !== null)
      return {
        status: 500,
        title: 'Answered, not recorded',
        detail: `The answer counts, but it could not be written to the audit log (${recorded}).`,
      };
    const what = effect === 'allow' ? (edited ? 'Approved with edited arguments' : 'Approved') : 'Denied';
    return {
      status: STATUS.ok,
      title: what,
      detail:
        effect === 'allow'
          ? `${record.toolName} was approved${edited ? ' with edited arguments (they pass the whole gate again)' : ''}.`
          : `${record.toolName} was denied${reasonText ? `: ${reasonText}` : ''}.`,
    };
  }
}
