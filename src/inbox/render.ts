/**
 * Server-rendered HTML of the inbox. Everything that comes from a request (tool names, arguments, reasons,
 * the trace, who asks) passes through {@link text}: HTML-escaped, and every invisible or reordering
 * character (bidi controls, zero-width characters, other format and control characters, odd spaces)
 * replaced by a visible marker naming its code point. Nothing from an approval is ever interpreted as HTML.
 */
import type { PendingRecord } from '../stores/types.js';

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
export function hasHiddenCharacters(value: string): boolean {
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
export function prettyJson(value: unknown): string {
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

/** What a page needs to know about where it is and who looks at it. */
export interface PageContext {
  /** The mount path ('' at the root), prefixed to every link. */
  readonly base: string;
  /** The signed-in approver, or null. */
  readonly approver: string | null;
  /** The CSRF token forms must carry. */
  readonly csrf: string;
  readonly now: number;
}

/** The whole page around `body`. No inline script or style: the CSP allows only the inbox's own files. */
export function layout(ctx: PageContext, title: string, body: string): string {
  const who =
    ctx.approver === null
      ? ''
      : `<form class="who" method="post" action="${escapeHtml(ctx.base)}/logout"><span>Signed in as <strong>${text(ctx.approver)}</strong></span> <input type="hidden" name="csrf" value="${escapeHtml(ctx.csrf)}"><button type="submit" class="link">Sign out</button></form>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(title)} · toolgate</title>
<link rel="stylesheet" href="${escapeHtml(ctx.base)}/assets/inbox.css">
<script src="${escapeHtml(ctx.base)}/assets/inbox.js" defer></script>
</head>
<body data-base="${escapeHtml(ctx.base)}">
<header class="top"><h1><a href="${escapeHtml(ctx.base)}/">toolgate approvals</a></h1>${who}</header>
<main id="main">
${body}
</main>
</body>
</html>
`;
}

/** What the inbox knows about an answered record beyond the store: the gate's verdict once it ran. */
export interface RecordOutcome {
  readonly effect: 'allow' | 'deny';
  readonly text: string;
}

function row(label: string, value: string | null): string {
  return `<div><dt>${label}</dt><dd>${value === null ? '<span class="none">—</span>' : text(value)}</dd></div>`;
}

function expiresText(record: PendingRecord, now: number): string {
  const seconds = Math.round((record.expiresAt - now) / 1000);
  if (seconds <= 0) return 'expired';
  if (seconds < 120) return `in ${seconds} s`;
  return `in ${Math.round(seconds / 60)} min`;
}

/** One approval as a card: who asks, what, why, the arguments, the trace, and (when pending) the answer forms. */
export function card(
  ctx: PageContext,
  record: PendingRecord,
  outcome: RecordOutcome | undefined,
  forms: boolean = record.status === 'pending',
): string {
  const id = escapeHtml(record.id);
  const heading = `h-${id}`;
  const asked =
    record.toolName === record.canonical
      ? text(record.toolName)
      : `${text(record.toolName)} <span class="canonical">(canonical: ${text(record.canonical)})</span>`;
  const args = prettyJson(record.parameters);
  const hidden = hasHiddenCharacters(JSON.stringify(record.parameters) ?? '')
    ? '<p class="warn" role="note">These arguments hold hidden or direction-changing characters, shown as ⟦U+…⟧.</p>'
    : '';
  const trace =
    record.trace === undefined
      ? ''
      : `<details class="trace"><summary>Explain trace</summary><pre>${text(prettyJson(record.trace))}</pre></details>`;
  let state: string;
  if (record.status === 'pending')
    state = `<p class="state pending">Waiting · expires ${expiresText(record, ctx.now)}</p>`;
  else if (record.status === 'expired') state = '<p class="state expired">Expired</p>';
  else {
    const a = record.answer;
    const by = a?.approver === undefined ? '' : ` by ${text(a.approver)}`;
    const what = a?.effect === 'allow' ? (a.arguments ? 'Approved with edited arguments' : 'Approved') : 'Denied';
    const reason = a?.reason ? ` — ${text(a.reason)}` : '';
    const result = outcome
      ? `<p class="outcome ${outcome.effect}">Gate: ${outcome.effect === 'allow' ? 'ran' : 'refused'} — ${text(outcome.text)}</p>`
      : '';
    state = `<p class="state answered">${what}${by}${reason}</p>${result}`;
  }
  return `<article class="approval ${record.status}" id="a-${id}" data-id="${id}" data-state="${escapeHtml(record.status)}${outcome ? '+' : ''}" aria-labelledby="${heading}">
<h2 id="${heading}">${asked}</h2>
${state}
<dl class="facts">
${row('Agent', record.agent)}${row('Tenant', record.tenant)}${row('Caller', record.caller)}${row('Run', record.runId)}${row('Source', record.source)}${row('Rule', record.rule)}${row('Why', record.reason)}${row('Policy version', record.binding.policyVersion)}
</dl>
<h3>Arguments</h3>
${hidden}<pre class="args" tabindex="0" aria-label="arguments">${text(args)}</pre>
${trace}
${forms ? answerForms(ctx, record, args) : ''}
</article>`;
}

function answerForms(ctx: PageContext, record: PendingRecord, args: string): string {
  const id = escapeHtml(record.id);
  const action = `${escapeHtml(ctx.base)}/approvals/${encodeURIComponent(record.id)}`;
  const csrf = `<input type="hidden" name="csrf" value="${escapeHtml(ctx.csrf)}">`;
  // The registry's handler route takes allow / deny once, without edits; only the runner remembers answers.
  const full = record.source !== 'registry';
  const remember =
    record.source === 'runner'
      ? `<fieldset class="remember"><legend>Remember the answer</legend>
<label><input type="radio" name="remember" value="once" checked> this call only</label>
<label><input type="radio" name="remember" value="run"> for this run</label>
<label><input type="radio" name="remember" value="session"> for this session</label>
</fieldset>`
      : '<input type="hidden" name="remember" value="once">';
  const edit = `<details class="edit"><summary>Approve with edited arguments</summary>
<form method="post" action="${action}/edit">
${csrf}
<label for="args-${id}">Arguments (JSON object)</label>
<textarea id="args-${id}" name="arguments" rows="6" spellcheck="false">${escapeHtml(args)}</textarea>
<div class="buttons"><button type="submit">Review the edited call</button></div>
</form>
</details>`;
  return `<form class="answer" method="post" action="${action}/answer">
${csrf}
${remember}
<label for="reason-${id}">Reason (a deny's reason is given to the model)</label>
<textarea id="reason-${id}" name="reason" rows="2" maxlength="2000"></textarea>
<div class="buttons">
<button type="submit" name="effect" value="allow" class="allow">Approve</button>
<button type="submit" name="effect" value="deny" class="deny">Deny</button>
</div>
</form>
${full ? edit : ''}`;
}

/** The inbox's list: pending first, then the most recently answered. */
export function listHtml(
  ctx: PageContext,
  pending: readonly PendingRecord[],
  recent: readonly PendingRecord[],
  outcomes: ReadonlyMap<string, RecordOutcome>,
): string {
  const waiting =
    pending.length === 0
      ? '<p class="empty">Nothing is waiting for an answer.</p>'
      : pending.map((r) => card(ctx, r, undefined)).join('\n');
  const done =
    recent.length === 0
      ? ''
      : `<h2 class="section">Recently answered</h2>\n${recent.map((r) => card(ctx, r, outcomes.get(r.id))).join('\n')}`;
  return `<section id="approvals" aria-live="polite" aria-label="Pending approvals">
<p class="count">${pending.length} waiting</p>
${waiting}
${done}
</section>`;
}

/** The page that shows the edited call as a diff and asks to confirm it. */
export function editReviewHtml(
  ctx: PageContext,
  record: PendingRecord,
  edited: Readonly<Record<string, unknown>>,
): string {
  const action = `${escapeHtml(ctx.base)}/approvals/${encodeURIComponent(record.id)}/answer`;
  const json = JSON.stringify(edited);
  return `<h2>Approve ${text(record.toolName)} with edited arguments?</h2>
<p>The edited call passes the whole gate again; a rule that forbids it refuses it.</p>
<pre class="diff" tabindex="0" aria-label="changes to the arguments">${diffHtml(prettyJson(record.parameters), prettyJson(edited))}</pre>
<form method="post" action="${action}">
<input type="hidden" name="csrf" value="${escapeHtml(ctx.csrf)}">
<input type="hidden" name="arguments" value="${escapeHtml(json)}">
<input type="hidden" name="remember" value="once">
<div class="buttons"><button type="submit" name="effect" value="allow" class="allow">Approve the edited call</button>
<a href="${escapeHtml(ctx.base)}/">Back</a></div>
</form>`;
}

/** A short page saying what happened (the result of a form post without script). */
export function messageHtml(ctx: PageContext, title: string, detail: string, kind: 'ok' | 'error'): string {
  return `<div class="message ${kind}" role="${kind === 'error' ? 'alert' : 'status'}"><h2>${escapeHtml(title)}</h2><p>${text(detail)}</p></div>
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
  const buttons =
    effect === null
      ? `${reason}<div class="buttons"><button type="submit" name="effect" value="allow" class="allow">Approve</button>
<button type="submit" name="effect" value="deny" class="deny">Deny</button></div>`
      : effect === 'allow'
        ? `<div class="buttons"><button type="submit" name="effect" value="allow" class="allow">Approve</button></div>`
        : `${reason}<div class="buttons"><button type="submit" name="effect" value="deny" class="deny">Deny</button></div>`;
  return `${card(ctx, record, undefined, false)}
<form class="answer" method="post" action="${action}">
${fields}
${record.status === 'pending' ? buttons : '<p>This approval is no longer waiting.</p>'}
</form>`;
}
