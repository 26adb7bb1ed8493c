/**
 * What waits: approvals put in the store by this process's sources, each with the callback that applies
 * its answer. An answer (given here, in another process, or a time-out) reaches its waiter exactly once:
 * the store's `watch` (PostgreSQL LISTEN/NOTIFY crosses processes) and the sweep (every `sweepIntervalMs`,
 * for stores whose watch does not) both end in {@link ApprovalQueue.settle}, which re-reads the callback
 * after its await so that of two concurrent settles only one finds it. The queue also tells webhooks,
 * sends reminders before expiry, and tells the pages' streams what changed.
 */
import type { ApproverRules } from '../contracts/approval.js';
import type { Answer, ApprovalRequest, ApprovalSource, PendingRecord } from '../stores/types.js';
import { consumeNonce } from '../gate/index.js';
import { canonical } from '../names.js';
import { rootUrl, signLink, writeAudit, type InboxContext } from './context.js';
import { deliver, payloadOf, type DeliveryReport, type InboxWebhook, type WebhookEvent } from './notify.js';
import type { RecordOutcome } from './render.js';

/** An approval as a source submits it (the store's record less what the inbox fills in). */
export type SubmittedApproval = Omit<PendingRecord, 'status' | 'answer' | 'answeredAt' | 'createdAt' | 'expiresAt'> & {
  readonly expiresAt?: number;
};

/** What a source of approvals (RunnerInbox, inboxHandler) needs of the inbox. */
export interface ApprovalSink {
  /** The default time an approval waits. */
  readonly ttlMs: number;
  now(): number;
  submit(approval: SubmittedApproval, onAnswer: (record: PendingRecord) => void): Promise<PendingRecord>;
  reportOutcome(id: string, outcome: RecordOutcome): void;
}

/**
 * The rules once a request's reminder is due: the escalation approvers may answer it too — added to, never
 * in place of, everyone the rules name (so the one approver check still decides; the tenant binding and four
 * eyes still hold). Every list gains the escalation names: where lists apply, an approver must be on each
 * of them, and each now holds the escalation approvers too, so who could answer still can. `unlisted` is for
 * a request no list applies to (nobody could answer it, which is exactly what an escalation is for): there
 * the escalation list is its one list. It is never used for a request some list applies to, where a `*`
 * tenant list of the escalation approvers alone would lock out the approvers a tool's own list names.
 */
export interface EscalatedRules {
  readonly listed: ApproverRules;
  readonly unlisted: ApproverRules;
}

function escalatedRules(rules: ApproverRules | null, escalateTo: readonly string[]): EscalatedRules | null {
  if (rules === null || (rules.tenants === undefined && rules.tools === undefined)) return null;
  const add = (lists: Readonly<Record<string, readonly string[]>>) =>
    Object.fromEntries(Object.entries(lists).map(([k, v]) => [k, [...v, ...escalateTo]]));
  const listed: ApproverRules = {
    ...rules,
    ...(rules.tenants ? { tenants: add(rules.tenants) } : {}),
    ...(rules.tools ? { tools: add(rules.tools) } : {}),
  };
  return { listed, unlisted: { ...listed, tenants: { ...listed.tenants, '*': [...escalateTo] } } };
}

/** True when some list of `rules` applies to the request: its tool's (canonical name), its tenant's or `*`. */
function listApplies(rules: ApproverRules, record: PendingRecord): boolean {
  const tool = canonical(record.canonical);
  if (Object.keys(rules.tools ?? {}).some((name) => canonical(name) === tool)) return true;
  const tenants = rules.tenants ?? {};
  return Object.hasOwn(tenants, '*') || (record.tenant !== null && Object.hasOwn(tenants, record.tenant));
}

export class ApprovalQueue implements ApprovalSink {
  readonly #ctx: InboxContext;
  readonly #waiting = new Map<string, (record: PendingRecord) => void>();
  readonly #outcomes = new Map<string, RecordOutcome>();
  readonly #listeners = new Set<(id: string) => void>();
  readonly #deliveries = new Set<Promise<DeliveryReport>>();
  readonly #reminded = new Set<string>();
  readonly #unwatch: (() => void) | null;
  readonly #timer: NodeJS.Timeout | null;
  readonly #escalated: EscalatedRules | null;

  constructor(ctx: InboxContext, sweepIntervalMs: number) {
    this.#ctx = ctx;
    this.#unwatch = ctx.store.watch ? ctx.store.watch((id) => this.changed(id)) : null;
    this.#timer =
      sweepIntervalMs > 0
        ? setInterval(() => {
            this.sweep().catch(() => undefined);
          }, sweepIntervalMs)
        : null;
    this.#timer?.unref();
    const escalateTo = ctx.reminders?.escalateTo;
    this.#escalated = escalateTo?.length ? escalatedRules(ctx.approvers, escalateTo) : null;
  }

  get ttlMs(): number {
    return this.#ctx.ttlMs;
  }

  now(): number {
    return this.#ctx.now();
  }

  /** The approver rules that apply to `record` now: escalated once its reminder is due. */
  rulesFor(record: PendingRecord): ApproverRules | null {
    const rules = this.#ctx.approvers;
    if (this.#escalated === null || rules === null || record.status !== 'pending' || !this.#reminderDue(record))
      return rules;
    return listApplies(rules, record) ? this.#escalated.listed : this.#escalated.unlisted;
  }

  #reminderDue(record: PendingRecord): boolean {
    const before = this.#ctx.reminders?.beforeExpiryMs;
    return before !== undefined && this.#ctx.now() >= record.expiresAt - before;
  }

  async submit(approval: SubmittedApproval, onAnswer: (record: PendingRecord) => void): Promise<PendingRecord> {
    const now = this.#ctx.now();
    const record: PendingRecord = {
      ...approval,
      createdAt: now,
      expiresAt: approval.expiresAt ?? now + this.#ctx.ttlMs,
      status: 'pending',
      answer: null,
      answeredAt: null,
    };
    this.#waiting.set(record.id, onAnswer);
    await this.#ctx.store.put(record);
    const stored = await this.#ctx.store.get(record.id);
    if (!stored) throw new Error(`the approval store lost approval ${record.id}`);
    if (stored.status !== 'pending') {
      void this.settle(record.id);
      return stored;
    }
    this.notify('approval.requested', stored);
    this.changed(record.id);
    return stored;
  }

  /** A route's `ask` that waits for this queue (see `Inbox.ask`). */
  ask(
    source: ApprovalSource,
    options: { readonly ttlMs?: number } = {},
  ): (request: ApprovalRequest) => Promise<Answer> {
    return (request) =>
      new Promise<Answer>((resolve, reject) => {
        const limit = this.#ctx.now() + (options.ttlMs ?? this.#ctx.ttlMs);
        const expiresAt = Math.min(request.binding.expiresAt, limit);
        this.submit({ ...request, source, expiresAt }, (record) => {
          const seconds = Math.round((record.expiresAt - record.createdAt) / 1000);
          resolve(
            record.answer ?? {
              effect: 'deny',
              reason: `no approver answered within ${seconds} s, so the request timed out and was denied`,
              approver: 'toolgate:timeout',
            },
          );
        }).catch(reject);
      });
  }

  /** Records the gate's verdict on an answered approval: shown on its card, and written to the audit log. */
  reportOutcome(id: string, outcome: RecordOutcome): void {
    this.#outcomes.set(id, outcome);
    this.changed(id);
    const done = outcome.effect === 'allow' ? 'ran' : outcome.effect === 'error' ? 'failed' : 'refused';
    void this.#ctx.store
      .get(id)
      .then((record) => writeAudit(this.#ctx, 'approval_outcome', id, record, null, null, outcome.text, done))
      .catch(() => undefined);
  }

  /** The gate's verdict on an answered approval, when this process heard it. */
  outcome(id: string): RecordOutcome | undefined {
    return this.#outcomes.get(id);
  }

  /** Hears the id of every approval that changed (put, answered, expired, an outcome). Returns the unsubscribe. */
  onChange(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  changed(id: string): void {
    for (const listener of this.#listeners) listener(id);
    if (this.#waiting.has(id)) void this.settle(id);
  }

  /** Hands an answered (or expired) approval to its waiter, once. */
  async settle(id: string): Promise<void> {
    if (!this.#waiting.has(id)) return;
    const record = await this.#ctx.store.get(id).catch(() => undefined);
    if (!record || record.status === 'pending') return;
    // Checked again after the await: of two concurrent settles only one finds the callback.
    const callback = this.#waiting.get(id);
    if (!callback) return;
    this.#waiting.delete(id);
    callback(record);
  }

  /**
   * Times out this process's approvals past their expiry (each is denied and its source told), sends the
   * reminders that are due, and picks up answers given in other processes. Returns how many timed out.
   */
  async sweep(): Promise<number> {
    let count = 0;
    for (const record of await this.#ctx.store.list({ status: 'expired' })) {
      if (!this.#waiting.has(record.id)) continue;
      count++;
      await writeAudit(
        this.#ctx,
        'approval_expired',
        record.id,
        record,
        { effect: 'deny', approver: 'toolgate:timeout', reason: 'no approver answered in time' },
        'timeout',
      ).catch(() => undefined);
      this.notify('approval.answered', record);
      await this.settle(record.id);
      this.changed(record.id);
    }
    if (this.#ctx.reminders) await this.#remind();
    // Answers given in another process (a store whose watch does not reach here) are picked up too.
    for (const id of [...this.#waiting.keys()]) await this.settle(id);
    return count;
  }

  async #remind(): Promise<void> {
    for (const record of await this.#ctx.store.list({ status: 'pending' })) {
      if (this.#reminded.has(record.id) || !this.#reminderDue(record)) continue;
      this.#reminded.add(record.id);
      // Once across every replica on the same nonce store. Only `true` is fresh: a store that fails or
      // answers anything but a boolean sends nothing (fail closed) and is asked again at the next sweep; the
      // rest of the sweep goes on.
      let fresh: boolean;
      try {
        fresh = await consumeNonce(
          this.#ctx.nonces,
          `toolgate.inbox.reminder:${record.id}`,
          record.expiresAt - record.createdAt,
        );
      } catch {
        this.#reminded.delete(record.id);
        continue;
      }
      if (!fresh) continue;
      this.notify('approval.reminder', record);
      this.changed(record.id);
    }
  }

  /** Tells the webhooks of the record's tenant and `*` (a reminder: the reminder's own webhooks, when set). */
  notify(type: WebhookEvent, record: PendingRecord): void {
    const hooks: [string, InboxWebhook][] = [];
    const reminders = this.#ctx.reminders;
    if (type === 'approval.reminder' && reminders?.webhooks?.length)
      for (const hook of reminders.webhooks) hooks.push(['*', hook]);
    else
      for (const key of record.tenant !== null && record.tenant !== '*' ? [record.tenant, '*'] : ['*'])
        for (const hook of this.#ctx.webhooks.get(key) ?? []) hooks.push([key, hook]);
    for (const [key, hook] of hooks) {
      const escalate = type === 'approval.reminder' ? reminders?.escalateTo?.[0] : undefined;
      // A link names the hook it was sent to (`webhook:*` for the catch-all), never the request's tenant,
      // and a tenant's hook acts for that tenant only; the approver rules decide whether it may answer.
      const approver = escalate ?? hook.approver ?? `webhook:${key}`;
      const tenants = escalate !== undefined || key === '*' ? null : [key];
      const links =
        type === 'approval.requested' || type === 'approval.reminder'
          ? {
              open: `${rootUrl(this.#ctx)}#a-${encodeURIComponent(record.id)}`,
              approve: signLink(this.#ctx, {
                approver,
                tenants,
                approval: record.id,
                effect: 'allow',
                expiresAt: record.expiresAt,
              }),
              deny: signLink(this.#ctx, {
                approver,
                tenants,
                approval: record.id,
                effect: 'deny',
                expiresAt: record.expiresAt,
              }),
            }
          : null;
      const delivery = deliver(hook, payloadOf(type, record, links, this.#ctx.now()), {
        ...(this.#ctx.retryDelays ? { delaysMs: this.#ctx.retryDelays } : {}),
      });
      this.#deliveries.add(delivery);
      void delivery.then(() => this.#deliveries.delete(delivery));
    }
  }

  /** Resolves when every webhook delivery started so far has ended. */
  async flush(): Promise<DeliveryReport[]> {
    return Promise.all([...this.#deliveries]);
  }

  /** Stops the sweep timer and the store watch. */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#unwatch?.();
  }
}
