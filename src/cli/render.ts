/**
 * Text output for the CLI: colour on a terminal (picocolors), plain when piped, and simple aligned tables.
 */
import picocolors from 'picocolors';
import stringWidth from 'string-width';
import { displaySafe } from '../names.js';
import type { ExplainedDecision, Explanation } from '../policy-file/explain.js';
import type { LintFinding, LintReport } from '../policy-file/lint.js';
import { formatIssue } from '../policy-file/load.js';
import type { PolicyIssue } from '../policy-file/types.js';

export type Colors = ReturnType<typeof picocolors.createColors>;

/**
 * `value` with every string in it (deeply: object values, array items) made display-safe: control characters
 * (an ANSI escape, a carriage return), bidi and other format characters written as `\u{XXXX}` (names.ts
 * `displaySafe`). What operators read (audit, report, explain) carries names and arguments a model chose; a
 * tool named `\u001b[2K\rallow` must not erase a line or print a forged verdict. Only the human-readable
 * output goes through it: JSON output stays exact.
 *
 * @example
 * cli.out(auditText(terminalSafe(records), cli));
 */
export function terminalSafe<T>(value: T): T {
  if (typeof value === 'string') return displaySafe(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => terminalSafe(v)) as T;
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[displaySafe(k)] = terminalSafe(v);
    return out as T;
  }
  return value;
}

/** Multi-line text (a diff) made display-safe line by line: its own line breaks kept, every other control escaped. */
export function terminalSafeLines(text: string): string {
  return text
    .split('\n')
    .map((line) => displaySafe(line))
    .join('\n');
}

/**
 * `text` as one shell word, for a command line the CLI prints to be pasted (`toolgate pin --accept tool=<sha256>`):
 * as is when plain, else single-quoted — a tool name is an upstream's, and `$(…)` in it must stay text.
 */
export function shellWord(text: string): string {
  return /^[\w./:@%+,=-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

/**
 * The `--accept` arguments of a `toolgate pin` command printed to be pasted, one `tool=<sha256>` each. A word beginning
 * with `-` is written `--accept=<word>`: after a bare `--accept`, commander read it as an option — an unprefixed
 * upstream's tool named `--accept` made its word `--accept=<sha256>`, a bare name (no hash) that accepted whatever
 * drift the upstream's tool of that name had when pasted, unreviewed (atk-accept).
 */
export function acceptWords(bound: Iterable<readonly [tool: string, sha256: string]>): string {
  const words = [...bound].map(([tool, sha256]) => `${terminalSafe(tool)}=${sha256}`);
  const plain = words.filter((w) => !w.startsWith('-')).map(shellWord);
  const dashed = words.filter((w) => w.startsWith('-')).map((w) => shellWord(`--accept=${w}`));
  return [...(plain.length > 0 ? ['--accept', ...plain] : []), ...dashed].join(' ');
}

export function colors(enabled: boolean): Colors {
  return picocolors.createColors(enabled);
}

/** Pads columns to the widest cell, by display width (a full-width letter takes two columns; colour codes none). */
export function table(rows: readonly (readonly string[])[], header: readonly string[], c: Colors): string {
  const visible = (s: string): number => stringWidth(s);
  const all = [header.map((h) => c.bold(h)), ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => visible(r[i] ?? ''))));
  return all
    .map((r) =>
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell + ' '.repeat(Math.max(0, widths[i]! - visible(cell)))))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/**
 * Who decided: the layer, the rule, or the gate's `by`. A rule that could not be judged is named as
 * such (`rule_error`), with its own result (an allow rule that could not be judged denies).
 */
export function byText(d: Pick<ExplainedDecision, 'by' | 'layer' | 'rule'>, ruleResult?: string): string {
  if (d.layer) return `layer ${d.layer}`;
  if (d.by === 'rule_error')
    return `rule_error: ${ruleResult ? `${ruleResult} rule` : 'rule'} ${JSON.stringify(d.rule ?? '?')} could not be judged`;
  if (d.rule) return `rule ${JSON.stringify(d.rule)}`;
  return d.by;
}

export function effectText(effect: string, c: Colors): string {
  if (effect === 'allow') return c.green('allow');
  if (effect === 'deny') return c.red('deny');
  return c.yellow(effect);
}

export function issuesText(issues: readonly PolicyIssue[], c: Colors): string {
  return issues.map((i) => `${c.red('error')} ${formatIssue(i)}`).join('\n');
}

/** One lint finding: `file:line:column  warning  code  message`. */
export function findingText(file: string, f: LintFinding, c: Colors): string {
  const level = f.severity === 'error' ? c.red('error  ') : c.yellow('warning');
  return `${file}:${f.line}:${f.column}  ${level}  ${c.dim(f.code)}  ${f.message}`;
}

export function lintText(report: LintReport, c: Colors): string {
  const lines = report.findings.map((f) => findingText(report.file, f, c));
  const summary =
    report.findings.length === 0
      ? c.green(`${report.file}: no problems found`)
      : `${report.errors} error${report.errors === 1 ? '' : 's'}, ${report.warnings} warning${report.warnings === 1 ? '' : 's'}${report.loaded ? '' : ' (the file was refused: nothing of it loads)'}`;
  return [...lines, summary].join('\n');
}

const OUTCOME: Record<string, string> = {
  matched: 'matched',
  not_matched: 'not matched',
  not_selected: 'not selected',
  threw: 'failed (denies)',
  not_reached: 'not reached',
};

export function explainText(e: Explanation, c: Colors): string {
  const out: string[] = [];
  const d = e.decision;
  const by = byText(d, e.rules.find((r) => r.outcome === 'threw')?.result);
  out.push(`${c.bold(e.tool)}  ${effectText(d.effect, c).toUpperCase()}  ${c.dim(`(stage ${d.stage}, by ${by})`)}`);
  out.push(`  ${d.reason}`);
  out.push('');
  out.push(
    `${c.bold('call')}       ${JSON.stringify(e.tool)} → canonical ${JSON.stringify(e.canonical)} (${e.format} shape)${e.found ? '' : c.red(', no such tool')}`,
  );
  if (e.found)
    out.push(
      `${c.bold('tool')}       ${e.found.name}${e.found.namespace ? `, namespace ${e.found.namespace}` : ''}, tags ${e.found.tags.join(', ') || '(none)'}`,
    );
  out.push(`${c.bold('arguments')}  ${e.arguments === null ? c.dim('(not validated)') : JSON.stringify(e.arguments)}`);
  out.push(c.bold('layers'));
  for (const l of e.layers) {
    const mark = l.permits === null ? c.dim('·') : l.permits ? c.green('✓') : c.red('✗');
    out.push(`  ${mark} ${l.layer.padEnd(6)} ${l.detail}`);
  }
  out.push(c.bold('rules'));
  if (e.rules.length === 0)
    out.push(
      d.stage === 'policy'
        ? `  no rules: fallback ${e.fallback}`
        : c.dim(`  not evaluated: the call was decided at stage ${d.stage}`),
    );
  for (const r of e.rules) {
    const mark =
      r.outcome === 'matched'
        ? c.green('✓')
        : r.outcome === 'threw'
          ? c.red('!')
          : r.outcome === 'not_matched'
            ? c.yellow('✗')
            : c.dim('·');
    const head = `  ${mark} #${r.index + 1} ${r.rule} (${r.result}, line ${r.line}): ${OUTCOME[r.outcome] ?? r.outcome}`;
    out.push(r.outcome === 'not_reached' ? c.dim(head) : head);
    if (r.outcome !== 'not_reached') out.push(`      ${r.detail}`);
    for (const cond of r.conditions) {
      if (cond.outcome === 'not_reached') continue;
      const m = cond.outcome === 'held' ? c.green('✓') : cond.outcome === 'failed' ? c.yellow('✗') : c.red('!');
      out.push(`        ${m} ${cond.detail}`);
    }
  }
  if (e.limits) {
    out.push(c.bold('limits'));
    for (const l of e.limits) {
      const window = l.windowMs === null ? 'no window' : `per ${l.windowMs / 1000} s`;
      if (l.max === null) {
        out.push(`  ${c.red('✗')} ${l.limit}: the tenant's plan gives no max (the call is refused) ${c.dim(l.key)}`);
        continue;
      }
      const full = l.used + l.cost > l.max;
      out.push(
        `  ${full ? c.red('✗') : c.green('✓')} ${l.limit}: ${l.used} of ${l.max} used (${window}); this call costs ${l.cost} ${c.dim(l.key)}`,
      );
    }
  }
  if (e.rules.length > 0 && !e.rules.some((r) => r.outcome === 'matched' || r.outcome === 'threw'))
    out.push(`  no rule matched: the fallback is ${e.fallback}`);
  out.push(`${c.bold('handler')}    ${e.handler ?? c.dim('not asked')}`);
  out.push(`${c.bold('decision')}   ${effectText(d.effect, c)} ${c.dim(`(policy ${e.policyVersion})`)}`);
  return out.join('\n');
}
