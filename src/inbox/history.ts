/**
 * The "Answered" view's data: the inbox's audit log read back newest first (who answered what, when, why,
 * the refused attempts, the time-outs, and what the gate did after), only what the approver may see, 20
 * a page. With an audit log that can be read (`openInboxAudit`: SQLite, PostgreSQL) the history survives
 * a restart; without one, the approval store's answered requests stand in.
 */
import type { ApproverIdentity, ApproverVerdict } from '../contracts/approval.js';
import type { PendingRecord } from '../stores/types.js';
import type { InboxAuditEntry, InboxContext } from './context.js';

/** One page of history. `older`: the cursor of the next page, or null at the end. */
export interface HistoryPage {
  readonly entries: readonly InboxAuditEntry[];
  readonly older: string | null;
}

const PAGE = 20;
const BATCH = 100;
/** The most audit rows one page reads while looking for rows this approver may see. */
const SCAN = 5000;

export class History {
  readonly #ctx: InboxContext;
  readonly #verdict: (
    who: ApproverIdentity,
    record: Pick<PendingRecord, 'tenant' | 'canonical' | 'caller'>,
  ) => ApproverVerdict;

  constructor(
    ctx: InboxContext,
    verdict: (who: ApproverIdentity, record: Pick<PendingRecord, 'tenant' | 'canonical' | 'caller'>) => ApproverVerdict,
  ) {
    this.#ctx = ctx;
    this.#verdict = verdict;
  }

  #visible(who: ApproverIdentity, entry: InboxAuditEntry): boolean {
    if (entry.tool === null) return false;
    const verdict = this.#verdict(who, { tenant: entry.tenant, canonical: entry.tool, caller: entry.caller ?? null });
    return verdict.may || !verdict.hidden;
  }

  /** The page of history before `before` (the newest page without it) that `who` may see. */
  async read(who: ApproverIdentity, before?: string): Promise<HistoryPage> {
    const read = this.#ctx.audit?.read;
    if (!read) return this.#fromStore(who, before);
    const entries: InboxAuditEntry[] = [];
    let cursor = before;
    let scanned = 0;
    while (entries.length < PAGE && scanned < SCAN) {
      const batch = await read.call(this.#ctx.audit, {
        ...(cursor !== undefined ? { before: cursor } : {}),
        limit: BATCH,
      });
      if (batch.length === 0) return { entries, older: null };
      scanned += batch.length;
      for (const entry of batch) {
        cursor = entry.seq;
        if (!this.#visible(who, entry)) continue;
        entries.push(entry);
        if (entries.length === PAGE) return { entries, older: entry.seq };
      }
      if (batch.length < BATCH) return { entries, older: null };
    }
    return { entries, older: cursor ?? null };
  }

  /** Without a readable audit log: the answered and expired requests of the approval store. */
  async #fromStore(who: ApproverIdentity, before?: string): Promise<HistoryPage> {
    const until = before !== undefined ? Number(before) : Infinity;
    const done = (await this.#ctx.store.list())
      .filter((r) => r.status !== 'pending')
      .map((r) => entryOf(r, this.#ctx))
      .filter((e) => Number(e.seq) < until && this.#visible(who, e))
      .sort((a, b) => Number(b.seq) - Number(a.seq));
    const entries = done.slice(0, PAGE);
    return { entries, older: done.length > PAGE ? entries.at(-1)!.seq : null };
  }
}

function entryOf(record: PendingRecord, ctx: InboxContext): InboxAuditEntry {
  const at = record.answeredAt ?? record.expiresAt;
  const a = record.answer;
  return {
    seq: String(at),
    type: record.status === 'expired' ? 'approval_expired' : 'approval_answered',
    at,
    approvalId: record.id,
    approver: a?.approver ?? null,
    via: null,
    tool: record.canonical,
    tenant: record.tenant,
    caller: record.caller,
    runId: record.runId,
    effect: a?.effect ?? (record.status === 'expired' ? 'deny' : null),
    remember: a ? (a.remember ?? 'once') : null,
    edited: a?.arguments !== undefined,
    reason: a?.reason ?? null,
    summary: ctx.cards.summaryOf(record),
  };
}
