/**
 * A policy diff as text (a terminal; colour optional) and as Markdown (a pull-request comment).
 */
import type { DiffChange, DiffExample, DiffUncertain, DiffVerdict, DiffWho, DiffWhoSet, PolicyDiff } from './types.js';

/** The colours the text uses (picocolors' shape); identity functions for plain text. */
export interface DiffColors {
  readonly green: (s: string) => string;
  readonly red: (s: string) => string;
  readonly yellow: (s: string) => string;
  readonly dim: (s: string) => string;
  readonly bold: (s: string) => string;
}

const PLAIN: DiffColors = { green: (s) => s, red: (s) => s, yellow: (s) => s, dim: (s) => s, bold: (s) => s };

/** What each kind of change is called, in every rendering of a diff (text, Markdown, the inbox's reload card). */
export const KIND: Readonly<Record<DiffChange['kind'], string>> = {
  allowed: 'newly allowed',
  denied: 'newly denied',
  asked: 'newly asked',
  'ask-rule': 'asked under another rule',
  limit: 'limit changed',
};

/** The heading of the `resources:` / `prompts:` regions. */
const ITEM = { resource: 'resource reads (resources:)', prompt: 'prompt gets (prompts:)' } as const;

function verdictText(v: DiffVerdict | null): string {
  if (v === null) return 'not known';
  const line = v.line !== null ? ` (line ${v.line})` : '';
  switch (v.by) {
    case 'rule':
      return `${v.effect} by rule ${JSON.stringify(v.rule)}${line}`;
    case 'rule_error':
      return `${v.effect}: rule ${JSON.stringify(v.rule)}${line} cannot judge it`;
    case 'fallback':
      return `${v.effect} by the fallback`;
    case 'allowlist':
      return `${v.effect} at the allowlist (${v.layer ?? 'layer'}): ${v.reason}`;
    case 'context':
      return `${v.effect}: ${v.reason}`;
    default:
      return `${v.effect} (${v.stage}, ${v.by}): ${v.reason}`;
  }
}

function whoText(w: DiffWho): string {
  const parts = [
    ...(w.agent !== undefined ? [`agent ${w.agent}`] : []),
    ...(w.tenant !== undefined ? [`tenant ${w.tenant}`] : []),
    ...(w.scopes !== undefined ? [`scopes ${w.scopes.join(',')}`] : []),
  ];
  return parts.length === 0 ? 'no agent, tenant or scopes given' : parts.join(', ');
}

function setText(s: DiffWhoSet): string {
  const one = (label: string, v: DiffWhoSet['agents']): string =>
    v === 'any' ? `${label} any` : `${label} ${v.map((x) => (x === null ? '(none)' : x)).join(', ')}`;
  return [one('agents', s.agents), one('tenants', s.tenants), one('scopes', s.scopes)].join(' · ');
}

function callText(e: DiffExample): string {
  const tags = e.ownTags ? ` [own tags: ${e.ownTags.length === 0 ? 'none' : e.ownTags.join(', ')}]` : '';
  return `${e.tool} ${JSON.stringify(e.arguments)}${tags}`;
}

function summary(diff: PolicyDiff): string {
  const widen = diff.changes.filter((c) => c.direction === 'widen').length;
  const narrow = diff.changes.filter((c) => c.direction === 'narrow').length;
  if (diff.equal && diff.settings.length === 0) return 'no change in what is decided';
  const parts = [
    diff.changes.length === 0
      ? 'no change in what is decided'
      : `${diff.changes.length} change${diff.changes.length === 1 ? '' : 's'} in what is decided (${widen} widen, ${narrow} narrow${diff.changes.length - widen - narrow > 0 ? `, ${diff.changes.length - widen - narrow} other` : ''})`,
  ];
  if (diff.uncertain.length > 0) parts.push(`${diff.uncertain.length} may change`);
  if (diff.settings.length > 0)
    parts.push(`${diff.settings.length} setting${diff.settings.length === 1 ? '' : 's'} changed`);
  return parts.join('; ');
}

function name(file: string | null): string {
  return file ?? '<input>';
}

/** The diff as text for a terminal, grouped by tool. */
export function diffText(diff: PolicyDiff, colors: DiffColors = PLAIN): string {
  const c = colors;
  const lines = [`${c.bold(`${name(diff.old.file)} → ${name(diff.new.file)}`)}: ${summary(diff)}`];
  const groups = new Map<string, { changes: DiffChange[]; uncertain: DiffUncertain[] }>();
  const group = (
    tool: string,
    others: boolean,
    item?: 'resource' | 'prompt',
  ): { changes: DiffChange[]; uncertain: DiffUncertain[] } => {
    const key = item ? ITEM[item] : others ? `${tool} (a tool neither file names)` : tool;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { changes: [], uncertain: [] }));
    return g;
  };
  for (const ch of diff.changes) group(ch.tool, ch.others, ch.item).changes.push(ch);
  for (const u of diff.uncertain)
    group(u.tool, u.others && u.tool !== '(a tool neither file names)', u.item).uncertain.push(u);
  for (const [tool, g] of groups) {
    lines.push('', c.bold(tool));
    for (const ch of g.changes) {
      const mark = ch.direction === 'widen' ? c.red('+') : ch.direction === 'narrow' ? c.green('-') : c.yellow('~');
      lines.push(`  ${mark} ${KIND[ch.kind]}  ${c.dim(setText(ch.who))}`);
      lines.push(`      where    ${ch.where}`);
      lines.push(`      example  ${callText(ch.example)}  ${c.dim(`(${whoText(ch.example.who)})`)}`);
      if (ch.limit) {
        const l = (x: typeof ch.limit.old): string =>
          x === null
            ? 'not counted'
            : `max ${x.max}, cost ${x.cost}, window ${x.windowMs === null ? 'none' : `${x.windowMs} ms`}${x.per.length > 0 ? `, per ${x.per.join(',')}` : ''}`;
        lines.push(`      old      limit ${JSON.stringify(ch.limit.name)}: ${l(ch.limit.old)}`);
        lines.push(`      new      limit ${JSON.stringify(ch.limit.name)}: ${l(ch.limit.new)}`);
      } else {
        lines.push(`      old      ${verdictText(ch.old)}`);
        lines.push(`      new      ${verdictText(ch.new)}`);
      }
    }
    for (const u of g.uncertain) {
      lines.push(`  ${c.yellow('?')} may change  ${c.dim(setText(u.who))}`);
      lines.push(`      where    ${u.where}`);
      lines.push(`      why      ${u.reason}`);
      if (u.old || u.new) {
        lines.push(`      old      ${verdictText(u.old)}`);
        lines.push(`      new      ${verdictText(u.new)}`);
      }
    }
  }
  if (diff.settings.length > 0) {
    lines.push('', c.bold('settings'));
    for (const s of diff.settings) {
      const mark = s.direction === 'widen' ? c.red('+') : s.direction === 'narrow' ? c.green('-') : c.yellow('~');
      lines.push(`  ${mark} ${s.text}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function md(text: string): string {
  return text.replace(/[|\\`*_<>[\]]/g, (ch) => `\\${ch}`).replace(/\n/g, ' ');
}

function code(text: string): string {
  const fence = text.includes('`') ? '``' : '`';
  return `${fence}${fence.length > 1 ? ' ' : ''}${text.replace(/\|/g, '\\|').replace(/\n/g, ' ')}${fence.length > 1 ? ' ' : ''}${fence}`;
}

/** The diff as Markdown, for a pull-request comment: a summary line, a table of changes, what may change, settings. */
export function diffMarkdown(diff: PolicyDiff): string {
  const out = [
    `### Policy diff: ${code(name(diff.old.file))} → ${code(name(diff.new.file))}`,
    '',
    `**${md(summary(diff))}**`,
  ];
  if (diff.changes.length > 0) {
    out.push('', '| change | tool | who | example call | old | new |', '| --- | --- | --- | --- | --- | --- |');
    for (const ch of diff.changes) {
      const mark = ch.direction === 'widen' ? '🔓' : ch.direction === 'narrow' ? '🔒' : '🔁';
      const old = ch.limit
        ? ch.limit.old === null
          ? 'not counted'
          : `limit ${code(ch.limit.name)} max ${ch.limit.old.max}`
        : md(verdictText(ch.old));
      const nu = ch.limit
        ? ch.limit.new === null
          ? 'not counted'
          : `limit ${code(ch.limit.name)} max ${ch.limit.new.max}`
        : md(verdictText(ch.new));
      out.push(
        `| ${mark} ${KIND[ch.kind]} | ${ch.item ? md(ITEM[ch.item]) : code(ch.tool)}${ch.others ? ' (not named in either file)' : ''} | ${md(setText(ch.who))} | ${code(callText(ch.example))} ${md(whoText(ch.example.who))} | ${old} | ${nu} |`,
      );
    }
  }
  if (diff.uncertain.length > 0) {
    out.push('', '**May change** (not decided either way):', '');
    for (const u of diff.uncertain)
      out.push(`- ${u.item ? md(ITEM[u.item]) : code(u.tool)}: ${md(u.where)} — ${md(u.reason)}`);
  }
  if (diff.settings.length > 0) {
    out.push('', '**Settings**', '');
    for (const s of diff.settings)
      out.push(`- ${s.direction === 'widen' ? '🔓' : s.direction === 'narrow' ? '🔒' : '🔁'} ${md(s.text)}`);
  }
  return `${out.join('\n')}\n`;
}
