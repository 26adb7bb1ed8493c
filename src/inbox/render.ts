/**
 * Server-rendered HTML of the inbox. Everything that comes from a request (tool names, arguments, reasons,
 * the trace, who asks) passes through {@link text}: HTML-escaped, and every invisible or reordering
 * character (bidi controls, zero-width characters, other format and control characters, odd spaces)
 * replaced by a visible marker naming its code point. Nothing from an approval is ever interpreted as HTML.
 */
import type { PendingRecord } from '../stores/types.js';
import { valueText, type Cards } from './summary.js';

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** HTML-escapes `value` (for text and attribute values alike). */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const NAMES: Readonly<Record<number, string>> = {
  0x00ad: 'SOFT HYPHEN',
  0x061c: 'ARABIC LETTER MARK',
  0x180e: 'MONGOLIAN VOWEL SEPARATOR',
  0x200b: 'ZERO WIDTH SPACE',
  0x200c: 'ZERO WIDTH NON-JOINER',
  0x200d: 'ZERO WIDTH JOINER',
  0x200e: 'LEFT-TO-RIGHT MARK',
  0x200f: 'RIGHT-TO-LEFT MARK',
  0x2028: 'LINE SEPARATOR',
  0x2029: 'PARAGRAPH SEPARATOR',
  0x202a: 'LEFT-TO-RIGHT EMBEDDING',
  0x202b: 'RIGHT-TO-LEFT EMBEDDING',
  0x202c: 'POP DIRECTIONAL FORMATTING',
  0x202d: 'LEFT-TO-RIGHT OVERRIDE',
  0x202e: 'RIGHT-TO-LEFT OVERRIDE',
  0x2060: 'WORD JOINER',
  0x2066: 'LEFT-TO-RIGHT ISOLATE',
  0x2067: 'RIGHT-TO-LEFT ISOLATE',
  0x2068: 'FIRST STRONG ISOLATE',
  0x2069: 'POP DIRECTIONAL ISOLATE',
  0xfeff: 'ZERO WIDTH NO-BREAK SPACE',
};

/**
 * Characters a reader cannot see or that reorder what they see: controls (C0, C1, DEL), format
 * characters (bidi controls, zero-width, tags, soft hyphen), line/paragraph separators, private use,
 * lone surrogates, variation selectors, and every space but U+0020.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\u{FE00}-\u{FE0F}\u{E0100}-\u{E01EF}]|(?! )\p{Zs}/gu;

function codePoint(c: string): string {
  return `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** True when `value` holds a character {@link text} would mark. */
function hasHiddenCharacters(value: string): boolean {
  HIDDEN.lastIndex = 0;
  const found = HIDDEN.test(value);
  HIDDEN.lastIndex = 0;
  return found;
}

/**
 * `value` as inert HTML text: escaped, with each hidden character shown as a marked `⟦U+XXXX⟧` (named in
 * its title and accessible label). Newlines are kept (for `<pre>`).
 */
export function text(value: string): string {
  let out = '';
  let last = 0;
  for (const match of value.matchAll(HIDDEN)) {
    const c = match[0];
    const at = match.index;
    if (c === '\n' || c === '\t') continue;
    out += escapeHtml(value.slice(last, at));
    const point = codePoint(c);
    const name = NAMES[c.codePointAt(0)!] ?? 'hidden character';
    out += `<mark class="hidden-char" title="${point} ${name}" aria-label="hidden character ${point} ${name}">⟦${point}⟧</mark>`;
    last = at + c.length;
  }
  return out + escapeHtml(value.slice(last));
}

/** `value` as plain text with each hidden character written `⟦U+XXXX⟧` (for messages that are not HTML). */
export function plain(value: string): string {
  return value.replace(HIDDEN, (c) => (c === '\n' || c === '\t' ? c : `⟦${codePoint(c)}⟧`));
}

/** Pretty JSON of a value (for arguments and traces); a value JSON cannot carry is described instead. */
function prettyJson(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return '(a value that cannot be shown as JSON)';
  }
}

/** A line diff of two texts (longest common subsequence), as inert HTML lines marked with - and +. */
export function diffHtml(before: string, after: string): string {
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.length * b.length > 4_000_000) {
    return [...a.map((l) => line('del', l)), ...b.map((l) => line('ins', l))].join('');
  }
  const table: Uint32Array[] = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i]![j] = a[i] === b[j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!);
    }
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push(line('same', a[i]!));
      i++;
      j++;
    } else if (table[i + 1]![j]! >= table[i]![j + 1]!) out.push(line('del', a[i++]!));
    else out.push(line('ins', b[j++]!));
  }
  while (i < a.length) out.push(line('del', a[i++]!));
  while (j < b.length) out.push(line('ins', b[j++]!));
  return out.join('');
}

function line(kind: 'same' | 'del' | 'ins', value: string): string {
  const sign = kind === 'del' ? '-' : kind === 'ins' ? '+' : ' ';
  const label = kind === 'del' ? 'removed: ' : kind === 'ins' ? 'added: ' : '';
  const tag = kind === 'del' ? 'del' : kind === 'ins' ? 'ins' : 'span';
  return `<${tag} class="diff-${kind}"><span class="visually-hidden">${label}</span>${sign} ${text(value)}</${tag}>\n`;
}

/**
 * Pretty JSON for the edit box: every hidden character escaped as `\uXXXX` (JSON's own escape), so the
 * box shows `invoice\u202egpj.exe` where the raw text would display reordered — and parses back to
 * exactly the same value.
 */
function editableJson(value: unknown): string {
  return prettyJson(value).replace(HIDDEN, (c) =>
    c === '\n' || c === '\t'
      ? c
      : [...c]
          .flatMap((ch) => {
            const units: string[] = [];
            for (let i = 0; i < ch.length; i++) units.push(`\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`);
            return units;
          })
          .join(''),
  );
}

/** What a page needs to know about where it is and who looks at it. */
export interface PageContext {
  /** The mount path ('' at the root), prefixed to every link. */
  readonly base: string;
  /** The signed-in approver, or null. */
  readonly approver: string | null;
  /** The CSRF token forms must carry. */
  readonly csrf: string;
  readonly now: number;
  /** How cards read (summaries, risk, the approve button's words). */
  readonly cards: Cards;
}

/** The whole page around `body`. No inline script or style: the CSP allows only the inbox's own files. */
export function layout(ctx: PageContext, title: string, body: string): string {
  const base = escapeHtml(ctx.base);
  const who =
    ctx.approver === null
      ? ''
      : `<form class="who" method="post" action="${base}/logout"><span>Signed in as <strong>${text(ctx.approver)}</strong></span> <input type="hidden" name="csrf" value="${escapeHtml(ctx.csrf)}"><button type="submit" class="link">Sign out</button></form>`;
  const nav =
    ctx.approver === null
      ? ''
      : `<nav class="views" aria-label="Views"><a href="${base}/">Waiting</a> <a href="${base}/history">Answered</a></nav>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(title)} · toolgate</title>
<link rel="stylesheet" href="${base}/assets/inbox.css">
<script src="${base}/assets/inbox.js" defer></script>
</head>
<body data-base="${base}">
<a class="skip" href="#main">Skip to the approvals</a>
<header class="top"><h1><a href="${base}/">toolgate approvals</a></h1>${nav}${who}</header>
<p id="live-status" class="live-status" role="status" hidden></p>
<main id="main" tabindex="-1">
<div id="flash" hidden></div>
${body}
</main>
<div id="announce" class="visually-hidden" aria-live="polite" aria-atomic="true"></div>
</body>
</html>
`;
}

/** What the inbox knows about an answered record beyond the store: the gate's verdict once it ran. */
export interface RecordOutcome {
  /** `allow`: the call ran; `deny`: the gate refused it; `error`: it ran and failed (or could not be resumed). */
  readonly effect: 'allow' | 'deny' | 'error';
  readonly text: string;
}

function row(label: string, value: string | null): string {
  return `<div><dt>${label}</dt><dd>${value === null ? '<span class="none">—</span>' : text(value)}</dd></div>`;
}

/** An absolute time, in UTC on the page (the script shows it in the reader's zone). */
export function timeHtml(ms: number, cls = 'at'): string {
  const iso = new Date(ms).toISOString();
  return `<time class="${cls}" datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

function inText(ms: number, now: number): string {
  const seconds = Math.round((ms - now) / 1000);
  if (seconds <= 0) return 'expired';
  if (seconds < 120) return `in ${seconds} s`;
  if (seconds < 7200) return `in ${Math.round(seconds / 60)} min`;
  return `in ${Math.round(seconds / 3600)} h`;
}

/** "expires in 14 min (at 14:32 UTC)": relative and absolute, updated by the script. */
function deadlineHtml(record: PendingRecord, now: number): string {
  return `expires <span class="countdown" data-expires="${record.expiresAt}">${inText(record.expiresAt, now)}</span> (at ${timeHtml(record.expiresAt, 'deadline')})`;
}

const RISK_LABEL = { low: 'Low risk', medium: 'Medium risk', high: 'High risk' } as const;
const RISK_ICON = { low: '●', medium: '▲', high: '■' } as const;

/** The arguments as a table: one row per argument, scalars as text, nested values as JSON. */
function argumentsTable(parameters: Readonly<Record<string, unknown>>): string {
  const rows = Object.entries(parameters).map(([key, value]) => {
    const shown =
      typeof value === 'object' && value !== null ? `<pre>${text(prettyJson(value))}</pre>` : text(valueText(value));
    return `<tr><th scope="row">${text(key)}</th><td>${shown}</td></tr>`;
  });
  if (rows.length === 0) return '<p class="none">No arguments.</p>';
  return `<table class="args-table"><caption class="visually-hidden">Arguments</caption><tbody>${rows.join('')}</tbody></table>`;
}

/** Options of {@link card}. */
export interface CardView {
  /** The answer forms (a pending request the viewer may answer). */
  readonly forms: boolean;
  /** Why the viewer may not answer (shown instead of the forms). */
  readonly refusal?: string | null;
  /** The compact list: the summary line, the deadline and the buttons; the rest behind "Details". */
  readonly compact?: boolean;
}

/** One approval as a card: what is decided first, then the buttons, then who asks, the arguments and the trace. */
export function card(
  ctx: PageContext,
  record: PendingRecord,
  outcome: RecordOutcome | undefined,
  view: CardView,
): string {
  const id = escapeHtml(record.id);
  const heading = `h-${id}`;
  const summary = ctx.cards.summaryOf(record);
  const risk = ctx.cards.riskOf(record);
  const riskBadge = risk
    ? `<span class="risk risk-${risk.level}" title="set by ${escapeHtml(risk.why)}"><span aria-hidden="true">${RISK_ICON[risk.level]}</span> ${RISK_LABEL[risk.level]}</span>`
    : '';
  // The canonical name is what runs: shown as prominently as the name asked when they differ.
  const tool =
    record.toolName === record.canonical
      ? `<p class="tool">Tool <strong>${text(record.toolName)}</strong></p>`
      : `<p class="tool differs">Asked as <strong>${text(record.toolName)}</strong> · runs <strong class="canonical">${text(record.canonical)}</strong></p>`;
  const hiddenHead =
    hasHiddenCharacters(record.toolName) || hasHiddenCharacters(summary)
      ? '<p class="warn" role="note">The tool name or summary holds hidden or direction-changing characters, shown as ⟦U+…⟧.</p>'
      : '';
  const hiddenArgs = hasHiddenCharacters(JSON.stringify(record.parameters) ?? '')
    ? '<p class="warn" role="note">These arguments hold hidden or direction-changing characters, shown as ⟦U+…⟧.</p>'
    : '';
  // A held policy reload's trace is its diff as text (each change with its example call): shown open, as
  // written (JSON would put it on one line with escaped quotes and \n); other traces are objects, as JSON.
  const trace =
    record.trace === undefined
      ? ''
      : record.kind === 'reload' && typeof record.trace === 'string'
        ? `<details class="trace" open><summary>The policy diff</summary><pre tabindex="0" aria-label="the policy diff">${text(record.trace)}</pre></details>`
        : `<details class="trace"><summary>Explain trace</summary><pre>${text(prettyJson(record.trace))}</pre></details>`;
  let state: string;
  if (record.status === 'pending') state = `<p class="state pending">Waiting · ${deadlineHtml(record, ctx.now)}</p>`;
  else if (record.status === 'expired')
    state = `<p class="state expired">Expired at ${timeHtml(record.expiresAt)} · denied, the model was told</p>`;
  else {
    const a = record.answer;
    const by = a?.approver === undefined ? '' : ` by ${text(a.approver)}`;
    const what = a?.effect === 'allow' ? (a.arguments ? 'Approved with edited arguments' : 'Approved') : 'Denied';
    const when = record.answeredAt !== null ? ` at ${timeHtml(record.answeredAt)}` : '';
    const reason = a?.reason ? ` — ${text(a.reason)}` : '';
    const result = outcome
      ? `<p class="outcome ${outcome.effect}">Gate: ${outcome.effect === 'allow' ? 'ran' : outcome.effect === 'error' ? 'failed' : 'refused'} — ${text(outcome.text)}</p>`
      : '';
    state = `<p class="state answered ${a?.effect === 'allow' ? 'allowed' : 'denied'}">${what}${by}${when}${reason}</p>${result}`;
  }
  const runLink =
    record.runId === null
      ? row('Run', null)
      : `<div><dt>Run</dt><dd><a href="${escapeHtml(ctx.base)}/?run=${encodeURIComponent(record.runId)}" title="this run's approvals">${text(record.runId)}</a></dd></div>`;
  const facts = `<dl class="facts">
${row('Agent', record.agent)}${row('Tenant', record.tenant)}${row('Caller', record.caller)}${runLink}${row('Rule', record.rule)}${row('Why', record.reason)}${row('Policy version', record.binding.policyVersion)}${row('Source', record.source)}<div><dt>Asked</dt><dd>${timeHtml(record.createdAt)}</dd></div>
</dl>`;
  const args = `<h3>Arguments</h3>
${hiddenArgs}${argumentsTable(record.parameters)}
<details class="json"><summary>Arguments as JSON</summary><pre class="args" tabindex="0" aria-label="arguments as JSON">${text(prettyJson(record.parameters))}</pre></details>`;
  const refusal =
    record.status === 'pending' && view.refusal
      ? `<p class="cannot">You cannot answer this: ${text(view.refusal)}</p>`
      : '';
  const forms = view.forms ? answerForms(ctx, record) : '';
  const details = `${facts}\n${args}\n${trace}\n${view.forms ? editForm(ctx, record) : ''}`;
  const riskClass = risk ? ` risk-${risk.level}` : '';
  return `<article class="approval ${record.status}${riskClass}${view.compact ? ' compact' : ''}" id="a-${id}" data-id="${id}" data-state="${escapeHtml(record.status)}${outcome ? '+' : ''}" data-expires="${record.expiresAt}" aria-labelledby="${heading}">
<div class="head">${riskBadge}<h2 id="${heading}" class="summary">${text(summary)}</h2></div>
${tool}${hiddenHead}
${state}
${refusal}${forms}
${view.compact ? `<details class="more"><summary>Details</summary>${details}</details>` : details}
</article>`;
}

function answerForms(ctx: PageContext, record: PendingRecord): string {
  const id = escapeHtml(record.id);
  const action = `${escapeHtml(ctx.base)}/approvals/${encodeURIComponent(record.id)}`;
  const csrf = `<input type="hidden" name="csrf" value="${escapeHtml(ctx.csrf)}">`;
  const caller = record.caller === null ? 'this caller' : text(record.caller);
  // The registry's handler route takes allow / deny once, without edits; only the runner remembers answers.
  const remember =
    record.source === 'runner'
      ? `<fieldset class="remember"><legend>Remember the answer</legend>
<label><input type="radio" name="remember" value="once" checked> this call only</label>
<label><input type="radio" name="remember" value="run"> for this run</label>
<label><input type="radio" name="remember" value="session" aria-describedby="session-${id}"> for this session</label>
<p class="note" id="session-${id}">For the session: every later call of ${text(record.canonical)} with these same arguments by ${caller} is answered the same way, without asking.</p>
</fieldset>
<div class="confirm-session" hidden><p>Remember for the session? Every later call of <strong>${text(record.canonical)}</strong> with these same arguments by <strong>${caller}</strong> will run without asking anyone.</p>
<div class="buttons"><button type="button" class="confirm-yes">Yes, remember for the session</button> <button type="button" class="confirm-no">Cancel</button></div></div>`
      : '<input type="hidden" name="remember" value="once">';
  return `<form class="answer" method="post" action="${action}/answer">
${csrf}
<div class="buttons">
<button type="submit" name="effect" value="allow" class="allow">${text(ctx.cards.approveLabel(record))}</button>
<button type="submit" name="effect" value="deny" class="deny">Deny</button>
</div>
<label for="reason-${id}">Reason (a deny's reason is given to the model)</label>
<textarea id="reason-${id}" name="reason" rows="2" maxlength="2000"></textarea>
${remember}
</form>`;
}

function editForm(ctx: PageContext, record: PendingRecord): string {
  // The registry's handler route cannot carry edited arguments, and only a tool call has arguments to edit
  // (a reload's parameters are its diff; a resource read or prompt get is answered as asked).
  if (record.source === 'registry' || record.kind !== 'tool') return '';
  const id = escapeHtml(record.id);
  const action = `${escapeHtml(ctx.base)}/approvals/${encodeURIComponent(record.id)}/edit`;
  return `<details class="edit"><summary>Approve with edited arguments</summary>
<form method="post" action="${action}" class="edit-form">
<input type="hidden" name="csrf" value="${escapeHtml(ctx.csrf)}">
<label for="args-${id}">Arguments (JSON object)</label>
<textarea id="args-${id}" name="arguments" rows="6" spellcheck="false">${escapeHtml(editableJson(record.parameters))}</textarea>
<div class="buttons"><button type="submit">Review the edited call</button></div>
</form>
</details>`;
}

/** The page (or, answered in place, the part of a card) that shows the edited call as a diff to confirm. */
export function editReviewHtml(
  ctx: PageContext,
  record: PendingRecord,
  edited: Readonly<Record<string, unknown>>,
): string {
  const action = `${escapeHtml(ctx.base)}/approvals/${encodeURIComponent(record.id)}/answer`;
  const json = JSON.stringify(edited);
  return `<div class="review" data-for="${escapeHtml(record.id)}"><h2>Approve ${text(record.toolName)} with edited arguments?</h2>
<p>The edited call passes the whole gate again; a rule that forbids it refuses it.</p>
<pre class="diff" tabindex="0" aria-label="changes to the arguments">${diffHtml(prettyJson(record.parameters), prettyJson(edited))}</pre>
<form method="post" action="${action}" class="answer">
<input type="hidden" name="csrf" value="${escapeHtml(ctx.csrf)}">
<input type="hidden" name="arguments" value="${escapeHtml(json)}">
<input type="hidden" name="remember" value="once">
<div class="buttons"><button type="submit" name="effect" value="allow" class="allow">Approve the edited call</button>
<a href="${escapeHtml(ctx.base)}/">Back</a></div>
</form></div>`;
}

/** A short page saying what happened (the result of a form post without script). */
export function messageHtml(ctx: PageContext, title: string, detail: string, kind: 'ok' | 'error'): string {
  // A deny is done, not a success: it is not shown in the success colour.
  const tone = kind === 'error' ? 'error' : /^Denied/.test(title) ? 'denied' : 'ok';
  return `<div class="message ${tone}" role="${kind === 'error' ? 'alert' : 'status'}"><h2>${escapeHtml(title)}</h2><p>${text(detail)}</p></div>
<p><a href="${escapeHtml(ctx.base)}/">Back to the inbox</a></p>`;
}

/** The page a signed link opens: the approval and one button that uses the link (GET never answers). */
export function linkHtml(
  ctx: PageContext,
  record: PendingRecord,
  token: string,
  effect: 'allow' | 'deny' | null,
): string {
  const action = `${escapeHtml(ctx.base)}/link`;
  const fields = `<input type="hidden" name="token" value="${escapeHtml(token)}">`;
  const reason = `<label for="link-reason">Reason (a deny's reason is given to the model)</label>
<textarea id="link-reason" name="reason" rows="2" maxlength="2000"></textarea>`;
  const approve = `<button type="submit" name="effect" value="allow" class="allow">${text(ctx.cards.approveLabel(record))}</button>`;
  const deny = '<button type="submit" name="effect" value="deny" class="deny">Deny</button>';
  const buttons =
    effect === null
      ? `<div class="buttons">${approve}\n${deny}</div>${reason}`
      : effect === 'allow'
        ? `<div class="buttons">${approve}</div>`
        : `${reason}<div class="buttons">${deny}</div>`;
  return `${card(ctx, record, undefined, { forms: false })}
<form class="answer link-answer" method="post" action="${action}">
${fields}
${record.status === 'pending' ? buttons : '<p>This approval is no longer waiting.</p>'}
</form>`;
}
