/**
 * Text output for the CLI: colour on a terminal (picocolors), plain when piped, and simple aligned tables.
 */
import { stripVTControlCharacters } from 'node:util';
import picocolors from 'picocolors';
import type { Explanation } from '../policy-file/explain.js';
import type { LintReport } from '../policy-file/lint.js';
import { formatIssue } from '../policy-file/load.js';
import type { PolicyIssue } from '../policy-file/types.js';

export type Colors = ReturnType<typeof picocolors.createColors>;

export function colors(enabled: boolean): Colors {
  return picocolors.createColors(enabled);
}

/** Pads columns to the widest cell (by code points, ignoring colour codes). */
export function table(rows: readonly (readonly string[])[], header: readonly string[], c: Colors): string {
  const visible = (s: string): number => [...stripVTControlCharacters(s)].length;
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

export function effectText(effect: string, c: Colors): string {
  if (effect === 'allow') return c.green('allow');
  if (effect === 'deny') return c.red('deny');
  return c.yellow(effect);
}

export function issuesText(issues: readonly PolicyIssue[], c: Colors): string {
  return issues.map((i) => `${c.red('error')} ${formatIssue(i)}`).join('\n');
}

export function lintText(report: LintReport, c: Colors): string {
  const lines = report.findings.map((f) => {
    const level = f.severity === 'error' ? c.red('error  ') : c.yellow('warning');
    return `${report.file}:${f.line}:${f.column}  ${level}  ${c.dim(f.code)}  ${f.message}`;
  });
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
  const by = d.layer ? `layer ${d.layer}` : d.rule ? `rule ${JSON.stringify(d.rule)}` : d.by;
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
  if (e.rules.length === 0) out.push(c.dim(`  not evaluated: the call was decided at stage ${d.stage}`));
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
  if (e.rules.length > 0 && !e.rules.some((r) => r.outcome === 'matched' || r.outcome === 'threw'))
    out.push(`  no rule matched: the fallback is ${e.fallback}`);
  out.push(`${c.bold('handler')}    ${e.handler ?? c.dim('not asked')}`);
  out.push(`${c.bold('decision')}   ${effectText(d.effect, c)} ${c.dim(`(policy ${e.policyVersion})`)}`);
  return out.join('\n');
}
