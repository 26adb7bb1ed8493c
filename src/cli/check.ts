/** `toolgate check`: decide a batch of calls. */
import type { Command } from 'commander';
import type { ToolCallInput } from '../formats/index.js';
import { decideCall } from '../policy-file/explain.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import { contextOptions, loadPolicy, readInput, who, type Cli, type ContextOptions } from './context.js';
import { EXIT, exitCodes, USAGE_LINE } from './exit-codes.js';
import { effectText, table } from './render.js';

export function registerCheck(program: Command, cli: Cli): void {
  const { c } = cli;
  const command = contextOptions(
    program
      .command('check')
      .description(
        'Decide a batch of calls, one JSON value per line: a call in any supported shape, or { "call": CALL, "agent"?, "tenant"?, "scopes"? } to set who asks per line.',
      )
      .argument('<calls>', 'a JSONL file of calls, or - for standard input'),
  ).addHelpText(
    'after',
    `\nPrints a table, or one JSON object per call with --json. Decides only: nothing runs, no handler is asked.`,
  );
  exitCodes(command, [
    [EXIT.OK, 'every call was decided'],
    [EXIT.POLICY, 'the policy file was refused'],
    USAGE_LINE,
  ]).action(async (file: string, options: ContextOptions) => {
    const set = await loadPolicy(cli, options.policy, options.json);
    if (!set) return;
    const text = await readInput(file);
    const registry = set.registry();
    const rows: string[][] = [];
    let n = 0;
    for (const [i, line] of text.split('\n').entries()) {
      if (line.trim() === '') continue;
      n++;
      const row = await checkLine(set, registry, line, i + 1, options);
      if (options.json) cli.out(JSON.stringify(row));
      else
        rows.push([
          String(row.line),
          row.tool,
          effectText(row.effect, c),
          row.layer ? `layer ${row.layer}` : row.rule ? `rule ${row.rule}` : row.by,
          row.reason,
        ]);
    }
    if (!options.json) cli.out(n === 0 ? 'no calls' : table(rows, ['line', 'tool', 'decision', 'by', 'reason'], c));
  });
}

interface CheckRow {
  readonly line: number;
  readonly callId: string | null;
  readonly tool: string;
  readonly canonical: string | null;
  readonly effect: 'allow' | 'deny' | 'ask';
  readonly stage: string;
  readonly by: string;
  readonly layer: string | null;
  readonly rule: string | null;
  readonly reason: string;
}

async function checkLine(
  set: PolicySet,
  registry: ReturnType<PolicySet['registry']>,
  line: string,
  number: number,
  options: ContextOptions,
): Promise<CheckRow> {
  const refused = (reason: string): CheckRow => ({
    line: number,
    callId: null,
    tool: '',
    canonical: null,
    effect: 'deny',
    stage: 'arguments',
    by: 'malformed_call',
    layer: null,
    rule: null,
    reason,
  });
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return refused(`line ${number} is not JSON: ${(error as Error).message}`);
  }
  let call: unknown = value;
  let context = who(options);
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'call' in value) {
    const envelope = value as { call: unknown; agent?: unknown; tenant?: unknown; scopes?: unknown };
    call = envelope.call;
    const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');
    if (
      (envelope.agent !== undefined && typeof envelope.agent !== 'string') ||
      (envelope.tenant !== undefined && typeof envelope.tenant !== 'string') ||
      (envelope.scopes !== undefined && !strings(envelope.scopes))
    ) {
      return refused(`line ${number}: "agent" and "tenant" must be strings and "scopes" a list of strings`);
    }
    context = {
      ...context,
      ...(typeof envelope.agent === 'string' ? { agent: envelope.agent } : {}),
      ...(typeof envelope.tenant === 'string' ? { tenant: envelope.tenant } : {}),
      ...(strings(envelope.scopes) ? { scopes: envelope.scopes } : {}),
    };
  }
  try {
    const d = await decideCall(set, call as ToolCallInput, context, registry);
    return {
      line: number,
      callId: d.callId,
      tool: d.tool,
      canonical: d.canonical,
      effect: d.effect,
      stage: d.stage,
      by: d.by,
      layer: d.layer,
      rule: d.rule,
      reason: d.reason,
    };
  } catch (error) {
    // An unknown agent or tenant on one line refuses that line, not the batch.
    return refused(`line ${number}: ${(error as Error).message}`);
  }
}
