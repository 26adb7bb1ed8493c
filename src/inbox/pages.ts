/**
 * The inbox's two views: the list of what waits (with filters, search, sorting and a compact view, all
 * plain GET forms that work without script) and the "Answered" history read from the audit log.
 */
import type { ApproverVerdict } from '../contracts/approval.js';
import type { PendingRecord } from '../stores/types.js';
import type { InboxAuditEntry } from './context.js';
import { card, escapeHtml, text, timeHtml, type PageContext, type RecordOutcome } from './render.js';
import type { Risk } from './summary.js';

/** What the list shows: filters (every one narrows), the search text, the sort order and the view. */
export interface ListQuery {
  readonly q: string;
  readonly tenant: string;
  readonly tool: string;
  readonly agent: string;
  readonly caller: string;
  readonly rule: string;
  readonly risk: Risk | '';
  readonly run: string;
  /** Only requests waiting at least this many minutes. */
  readonly age: number;
  readonly sort: 'oldest' | 'deadline' | 'newest';
  readonly view: 'cards' | 'compact';
}

const FILTERS = ['tenant', 'tool', 'agent', 'caller', 'rule', 'run'] as const;

/** The list query of a page's query string (unknown values are ignored). */
export function listQuery(params: Readonly<Record<string, string | undefined>>): ListQuery {
  const one = (name: string) => (params[name] ?? '').slice(0, 200).trim();
  const risk = one('risk');
  const sort = one('sort');
  const age = Number(one('age'));
  return {
    q: one('q'),
    tenant: one('tenant'),
    tool: one('tool'),
    agent: one('agent'),
    caller: one('caller'),
    rule: one('rule'),
    run: one('run'),
    risk: risk === 'low' || risk === 'medium' || risk === 'high' ? risk : '',
    age: Number.isFinite(age) && age > 0 ? age : 0,
    sort: sort === 'deadline' || sort === 'newest' ? sort : 'oldest',
    view: one('view') === 'compact' ? 'compact' : 'cards',
  };
}

function filtered(q: ListQuery): boolean {
  return FILTERS.some((f) => q[f] !== '') || q.q !== '' || q.risk !== '' || q.age > 0;
}

function fieldOf(record: PendingRecord, name: (typeof FILTERS)[number]): string {
  switch (name) {
    case 'tool':
      return record.canonical;
    case 'run':
      return record.runId ?? '';
    default:
      return record[name] ?? '';
  }
}

function matches(ctx: PageContext, record: PendingRecord, q: ListQuery, waitingOnly: boolean): boolean {
  for (const f of FILTERS) if (q[f] !== '' && fieldOf(record, f) !== q[f]) return false;
  if (q.risk !== '' && ctx.cards.riskOf(record)?.level !== q.risk) return false;
  if (waitingOnly && q.age > 0 && ctx.now - record.createdAt < q.age * 60_000) return false;
  if (q.q !== '') {
    const needle = q.q.toLowerCase();
    const hay = [
      ctx.cards.summaryOf(record),
      record.toolName,
      record.canonical,
      record.agent,
      record.tenant ?? '',
      record.caller ?? '',
      record.rule,
      record.reason,
      record.runId ?? '',
      JSON.stringify(record.parameters) ?? '',
    ]
      .join('\n')
      .toLowerCase();
    if (!hay.includes(needle)) return false;
  }
  return true;
}

function select(name: string, label: string, values: readonly string[], chosen: string): string {
  const options = [...new Set(values.filter((v) => v !== ''))].sort();
  if (chosen !== '' && !options.includes(chosen)) options.push(chosen);
  return `<label>${label} <select name="${name}"><option value="">any</option>${options
    .map((v) => `<option value="${escapeHtml(v)}"${v === chosen ? ' selected' : ''}>${text(v)}</option>`)
    .join('')}</select></label>`;
}

function filtersHtml(ctx: PageContext, records: readonly PendingRecord[], q: ListQuery): string {
  const choose = (name: 'sort' | 'view', options: readonly [string, string][], chosen: string) =>
    `<label>${name === 'sort' ? 'Sort' : 'View'} <select name="${name}">${options
      .map(([v, l]) => `<option value="${v}"${v === chosen ? ' selected' : ''}>${l}</option>`)
      .join('')}</select></label>`;
  const risks = ['high', 'medium', 'low'].map(
    (r) => `<option value="${r}"${q.risk === r ? ' selected' : ''}>${r}</option>`,
  );
  return `<details class="filters"${filtered(q) ? ' open' : ''}><summary>Filter, search and sort</summary>
<form method="get" action="${escapeHtml(ctx.base)}/" role="search" class="filter-form">
<label>Search <input type="search" name="q" value="${escapeHtml(q.q)}" placeholder="order, IBAN, caller…"></label>
${select(
  'tenant',
  'Tenant',
  records.map((r) => r.tenant ?? ''),
  q.tenant,
)}
${select(
  'tool',
  'Tool',
  records.map((r) => r.canonical),
  q.tool,
)}
${select(
  'agent',
  'Agent',
  records.map((r) => r.agent),
  q.agent,
)}
${select(
  'caller',
  'Caller',
  records.map((r) => r.caller ?? ''),
  q.caller,
)}
${select(
  'rule',
  'Rule',
  records.map((r) => r.rule),
  q.rule,
)}
<label>Risk <select name="risk"><option value="">any</option>${risks.join('')}</select></label>
<label>Waiting at least <input type="number" name="age" min="0" step="1" value="${q.age > 0 ? q.age : ''}" inputmode="numeric"> min</label>
${q.run !== '' ? `<input type="hidden" name="run" value="${escapeHtml(q.run)}">` : ''}
${choose(
  'sort',
  [
    ['oldest', 'oldest first'],
    ['deadline', 'deadline first'],
    ['newest', 'newest first'],
  ],
  q.sort,
)}
${choose(
  'view',
  [
    ['cards', 'cards'],
    ['compact', 'compact list'],
  ],
  q.view,
)}
<div class="buttons"><button type="submit">Apply</button> <a href="${escapeHtml(ctx.base)}/">Clear</a></div>
</form></details>`;
}

function order(q: ListQuery): (a: PendingRecord, b: PendingRecord) => number {
  if (q.sort === 'deadline') return (a, b) => a.expiresAt - b.expiresAt || a.createdAt - b.createdAt;
  if (q.sort === 'newest') return (a, b) => b.createdAt - a.createdAt;
  return (a, b) => a.createdAt - b.createdAt;
}

/**
 * The list: what waits for this approver (filtered, sorted), then the most recently answered. `records`
 * are those the approver may see; `verdictOf` says which of them they may answer.
 */
export function listHtml(
  ctx: PageContext,
  records: readonly PendingRecord[],
  outcomeOf: (id: string) => RecordOutcome | undefined,
  q: ListQuery,
  verdictOf: (record: PendingRecord) => ApproverVerdict,
): string {
  const waiting = records.filter((r) => r.status === 'pending');
  const pending = waiting.filter((r) => matches(ctx, r, q, true)).sort(order(q));
  const recent = records
    .filter((r) => r.status !== 'pending' && matches(ctx, r, q, false))
    .sort((a, b) => (b.answeredAt ?? b.expiresAt) - (a.answeredAt ?? a.expiresAt))
    .slice(0, 20);
  const compact = q.view === 'compact';
  const cardOf = (r: PendingRecord) => {
    const verdict = verdictOf(r);
    return card(ctx, r, outcomeOf(r.id), {
      forms: r.status === 'pending' && verdict.may,
      refusal: verdict.may || verdict.hidden ? null : verdict.reason,
      compact,
    });
  };
  const count = filtered(q) ? `${pending.length} of ${waiting.length} waiting` : `${pending.length} waiting`;
  const body =
    pending.length === 0
      ? `<p class="empty">${filtered(q) ? 'Nothing waiting matches these filters.' : 'Nothing is waiting for an answer.'}</p>`
      : pending.map(cardOf).join('\n');
  const done =
    recent.length === 0
      ? ''
      : `<h2 class="section">Recently answered <a class="more-link" href="${escapeHtml(ctx.base)}/history">all answers</a></h2>\n${recent.map(cardOf).join('\n')}`;
  return `<section id="approvals" class="${compact ? 'list compact' : 'list'}" aria-label="Approvals" data-waiting="${waiting.length}" data-now="${ctx.now}">
${filtersHtml(ctx, records, q)}
<p class="count">${count}</p>
${body}
${done}
</section>`;
}

/** How the history names one audit record. */
function happened(entry: InboxAuditEntry): { what: string; tone: string } {
  const by = entry.approver ? ` by ${text(entry.approver)}` : '';
  const reason = entry.reason ? ` — ${text(entry.reason)}` : '';
  switch (entry.type) {
    case 'approval_answered':
      return {
        what: `${entry.effect === 'allow' ? (entry.edited ? 'Approved with edited arguments' : 'Approved') : 'Denied'}${by}${entry.via ? ` (${entry.via})` : ''}${reason}`,
        tone: entry.effect === 'allow' ? 'allowed' : 'denied',
      };
    case 'approval_answer_refused':
      return { what: `Refused attempt${by}${reason}`, tone: 'refused' };
    case 'approval_expired':
      return { what: 'Expired: nobody answered in time, denied', tone: 'denied' };
    default:
      return {
        what: `The gate ${entry.outcome === 'ran' ? 'ran it' : entry.outcome === 'failed' ? 'ran it and it failed' : 'refused it'}${reason}`,
        tone: entry.outcome === 'ran' ? 'allowed' : 'denied',
      };
  }
}

/** The "Answered" view: what was answered, by whom, when, with what result; 20 a page, newest first. */
export function historyHtml(
  ctx: PageContext,
  page: { readonly entries: readonly InboxAuditEntry[]; readonly older: string | null },
): string {
  const base = escapeHtml(ctx.base);
  const rows = page.entries.map((e) => {
    const { what, tone } = happened(e);
    const run =
      e.runId === null ? '' : ` · run <a href="${base}/?run=${encodeURIComponent(e.runId)}">${text(e.runId)}</a>`;
    const request = `${text(e.summary ?? e.tool ?? e.approvalId)}<div class="sub">${text(e.tool ?? '')}${e.tenant ? ` · ${text(e.tenant)}` : ''}${run}</div>`;
    return `<tr class="${tone}" data-approval="${escapeHtml(e.approvalId)}"><td>${timeHtml(e.at)}</td><td>${request}</td><td>${what}</td></tr>`;
  });
  const table =
    rows.length === 0
      ? '<p class="empty">Nothing answered yet.</p>'
      : `<table class="history"><caption class="visually-hidden">Answered approvals, newest first</caption><thead><tr><th scope="col">When</th><th scope="col">Request</th><th scope="col">What happened</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
  const older =
    page.older === null
      ? ''
      : `<p><a rel="next" href="${base}/history?before=${encodeURIComponent(page.older)}">Older answers</a></p>`;
  return `<section id="history" aria-label="Answered approvals"><h2>Answered</h2>
${table}
${older}
</section>`;
}
