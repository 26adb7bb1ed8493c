/**
 * `toolgate report <audit>`: what shadow rules would have done, from a gateway audit file (JSONL): per
 * shadow rule, how many calls it would have denied or sent to a person, and which tools, resources or
 * prompts; plus every mode change recorded. Lines that are not audit records are counted and skipped.
 */
import type { Command } from 'commander';
import type { GatewayAuditRecord } from '../gateway/audit.js';
import { readInput, type Cli } from './context.js';
import { EXIT, exitCodes, USAGE_LINE } from './exit-codes.js';
import { table, terminalSafe } from './render.js';
import { parseJsonText } from '../json-text.js';

/** The summary `toolgate report` prints. */
export interface ShadowReport {
  readonly records: number;
  readonly skipped: number;
  /** Decisions recorded (tool calls, resource reads, prompt gets). */
  readonly decisions: number;
  /** Per shadow rule (`<fallback>` when the shadow policy's fallback decided). */
  readonly rules: readonly {
    readonly rule: string;
    readonly kind: 'tool' | 'resource' | 'prompt';
    readonly wouldDeny: number;
    readonly wouldAsk: number;
    readonly wouldAllow: number;
    /** Targets (tool, URI, prompt) with their counts, most frequent first. */
    readonly targets: readonly { readonly target: string; readonly count: number }[];
  }[];
  readonly modes: readonly {
    readonly time: string;
    readonly event: string;
    readonly policy: string;
    readonly mode: string;
    readonly changes: readonly string[];
  }[];
}

/** Summarises audit records. */
export function shadowReport(lines: readonly string[]): ShadowReport {
  let records = 0;
  let skipped = 0;
  let decisions = 0;
  const rules = new Map<
    string,
    {
      rule: string;
      kind: 'tool' | 'resource' | 'prompt';
      wouldDeny: number;
      wouldAsk: number;
      wouldAllow: number;
      targets: Map<string, number>;
    }
  >();
  const modes: ShadowReport['modes'][number][] = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    let record: GatewayAuditRecord;
    try {
      record = parseJsonText(line) as GatewayAuditRecord;
      if (typeof record !== 'object' || record === null || typeof record.type !== 'string')
        throw new Error('not a record');
    } catch {
      skipped++;
      continue;
    }
    records++;
    if (record.type === 'mode') {
      modes.push({
        time: record.time,
        event: record.event,
        policy: record.policy,
        mode: record.mode,
        changes: record.changes,
      });
      continue;
    }
    if (record.type !== 'tool' && record.type !== 'resource' && record.type !== 'prompt') continue;
    decisions++;
    const shadow = record.shadow;
    if (!shadow) continue;
    const key = `${record.type} ${shadow.rule ?? '<fallback>'}`;
    let entry = rules.get(key);
    if (!entry)
      rules.set(
        key,
        (entry = {
          rule: shadow.rule ?? '<fallback>',
          kind: record.type,
          wouldDeny: 0,
          wouldAsk: 0,
          wouldAllow: 0,
          targets: new Map(),
        }),
      );
    if (shadow.effect === 'deny') entry.wouldDeny++;
    else if (shadow.effect === 'ask') entry.wouldAsk++;
    else entry.wouldAllow++;
    const target = record.type === 'tool' ? (record.decision?.tool ?? '?') : record.target;
    entry.targets.set(target, (entry.targets.get(target) ?? 0) + 1);
  }
  return {
    records,
    skipped,
    decisions,
    rules: [...rules.values()]
      .map((r) => ({
        ...r,
        targets: [...r.targets].map(([target, count]) => ({ target, count })).sort((a, b) => b.count - a.count),
      }))
      .sort((a, b) => b.wouldDeny - a.wouldDeny || b.wouldAsk - a.wouldAsk),
    modes,
  };
}

export function registerReport(program: Command, cli: Cli): void {
  const command = program
    .command('report')
    .description('Summarise a gateway audit file: what shadow rules would have denied or asked, and every mode change.')
    .argument('<audit>', 'the audit file (JSONL, as written by toolgate gateway --audit), or - for standard input')
    .option('--json', 'print the summary as JSON');
  exitCodes(command, [[EXIT.OK, 'the report was printed'], USAGE_LINE]).action(
    async (file: string, options: { json?: boolean }) => {
      const exact = shadowReport((await readInput(file)).split('\n'));
      if (options.json) {
        cli.out(JSON.stringify(exact));
        return;
      }
      // Targets, rule names and mode changes come from the audit file (models, upstreams): escaped for the terminal.
      const report = terminalSafe(exact);
      cli.out(
        `${report.records} records, ${report.decisions} decisions${report.skipped ? `, ${report.skipped} lines skipped (not audit records)` : ''}`,
      );
      for (const m of report.modes)
        cli.out(`${m.time} ${m.event}: policy ${m.policy} in ${m.mode} mode; ${m.changes.join('; ')}`);
      if (report.rules.length === 0) {
        cli.out('no shadow rule would have decided differently');
        return;
      }
      const rows = report.rules.map((r) => [
        r.rule,
        r.kind,
        String(r.wouldDeny),
        String(r.wouldAsk),
        String(r.wouldAllow),
        r.targets
          .slice(0, 5)
          .map((t) => `${t.target} ×${t.count}`)
          .join(', '),
      ]);
      cli.out(table(rows, ['shadow rule', 'kind', 'would deny', 'would ask', 'would allow', 'targets'], cli.c));
    },
  );
}
