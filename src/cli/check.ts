/** `toolgate check`: decide a batch of calls (one per line, or every call of a message) for a CI job. */
import { Option, type Command } from 'commander';
import type { ToolCallInput } from '../formats/index.js';
import { previewDecision } from '../policy-file/explain.js';
import type { PolicyContextInput, PolicySet } from '../policy-file/policy-set.js';
import { messageItems } from './check-input.js';
import {
  contextOptions,
  loadPolicy,
  readInput,
  warnConfusables,
  who,
  type Cli,
  type ContextOptions,
} from './context.js';
import { EXIT, exitCodes, USAGE_LINE } from './exit-codes.js';
import { parseJsonText } from '../json-text.js';
import { byText, effectText, table } from './render.js';

interface CheckOptions extends ContextOptions {
  readonly failOn?: 'deny' | 'ask';
}

export function registerCheck(program: Command, cli: Cli): void {
  const { c } = cli;
  const command = contextOptions(
    program
      .command('check')
      .description(
        'Decide a batch of calls, one JSON value per line: a call in any supported shape, a whole assistant message (OpenAI tool_calls, Anthropic content, Gemini parts, Responses output) whose calls are each decided, or { "call" | "message": …, "agent"?, "tenant"?, "scopes"? } to set who asks per line.',
      )
      .argument('<calls>', 'a JSONL file of calls or messages, or - for standard input')
      .addOption(
        new Option(
          '--fail-on <effect>',
          'exit non-zero when a call is denied (deny: exit 3), or denied or needs approval (ask: exit 3, else 4)',
        ).choices(['deny', 'ask']),
      ),
  ).addHelpText(
    'after',
    `\nPrints a table and a summary line, or one JSON object per call with --json (the summary then goes to stderr).\nDecides only: nothing runs, no handler is asked. A line that is not JSON, and any item of a message that is\nnot a call toolgate can decide, is a denied row.`,
  );
  exitCodes(command, [
    [EXIT.OK, 'every call was decided (without --fail-on, whatever the decisions)'],
    [EXIT.POLICY, 'the policy file was refused'],
    USAGE_LINE,
    [EXIT.DENIED, 'with --fail-on deny or ask: a call was denied'],
    [EXIT.ASK, 'with --fail-on ask: a call needs approval, and none was denied'],
  ]).action(async (file: string, options: CheckOptions) => {
    const set = await loadPolicy(cli, options.policy, options.json);
    if (!set) return;
    set.context(who(options)); // an unknown --agent or --tenant is a usage error, not a refused row per call
    const text = await readInput(file);
    warnConfusables(cli, set);
    const registry = set.registry({ confusables: 'off' });
    const results = new Map(set.rules.map((r) => [r.name, r.result]));
    const rows: string[][] = [];
    const counts = { allow: 0, deny: 0, ask: 0 };
    for (const [i, line] of text.split('\n').entries()) {
      if (line.trim() === '') continue;
      for (const row of await checkLine(set, registry, line, i + 1, options)) {
        counts[row.effect]++;
        if (options.json) cli.out(JSON.stringify(row));
        else
          rows.push([
            row.item === null ? String(row.line) : `${row.line}.${row.item}`,
            row.tool,
            effectText(row.effect, c),
            byText(row, row.rule === null ? undefined : results.get(row.rule)),
            row.reason,
          ]);
      }
    }
    const total = counts.allow + counts.deny + counts.ask;
    const failed =
      options.failOn === undefined
        ? null
        : counts.deny > 0
          ? EXIT.DENIED
          : options.failOn === 'ask' && counts.ask > 0
            ? EXIT.ASK
            : null;
    const summary =
      `${total} call${total === 1 ? '' : 's'}: ${counts.allow} allowed, ${counts.deny} denied, ${counts.ask} need${counts.ask === 1 ? 's' : ''} approval` +
      (options.failOn === undefined
        ? ''
        : failed === null
          ? ` (passes --fail-on ${options.failOn})`
          : ` (fails --fail-on ${options.failOn})`);
    if (options.json) cli.err(summary);
    else {
      if (rows.length > 0) cli.out(table(rows, ['line', 'tool', 'decision', 'by', 'reason'], c));
      cli.out(failed === null ? summary : c.red(summary));
    }
    if (failed !== null) cli.exit(failed);
  });
}

interface CheckRow {
  readonly line: number;
  /** The call's place (1-based) in the message on its line; null when the line is one call. */
  readonly item: number | null;
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
): Promise<CheckRow[]> {
  const refused = (reason: string, item: number | null = null): CheckRow => ({
    line: number,
    item,
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
    value = parseJsonText(line);
  } catch (error) {
    return [refused(`line ${number} is not JSON: ${(error as Error).message}`)];
  }
  let payload: unknown = value;
  let context = who(options);
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && ('call' in value || 'message' in value)) {
    const envelope = value as {
      call?: unknown;
      message?: unknown;
      agent?: unknown;
      tenant?: unknown;
      scopes?: unknown;
    };
    if ('call' in envelope && 'message' in envelope)
      return [refused(`line ${number}: give "call" or "message", not both`)];
    payload = 'call' in envelope ? envelope.call : envelope.message;
    const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');
    if (
      (envelope.agent !== undefined && typeof envelope.agent !== 'string') ||
      (envelope.tenant !== undefined && typeof envelope.tenant !== 'string') ||
      (envelope.scopes !== undefined && !strings(envelope.scopes))
    ) {
      return [refused(`line ${number}: "agent" and "tenant" must be strings and "scopes" a list of strings`)];
    }
    context = {
      ...context,
      ...(typeof envelope.agent === 'string' ? { agent: envelope.agent } : {}),
      ...(typeof envelope.tenant === 'string' ? { tenant: envelope.tenant } : {}),
      ...(strings(envelope.scopes) ? { scopes: envelope.scopes } : {}),
    };
  }
  const items = messageItems(payload);
  if (items === null) return [await decideOne(set, registry, payload, context, number, null, refused)];
  const rows: CheckRow[] = [];
  for (const [i, it] of items.entries()) {
    if (it.problem !== undefined) rows.push(refused(`line ${number}, item ${i + 1}: ${it.problem}`, i + 1));
    else rows.push(await decideOne(set, registry, it.call, context, number, i + 1, refused));
  }
  return rows;
}

async function decideOne(
  set: PolicySet,
  registry: ReturnType<PolicySet['registry']>,
  call: unknown,
  context: PolicyContextInput,
  line: number,
  item: number | null,
  refused: (reason: string, item: number | null) => CheckRow,
): Promise<CheckRow> {
  try {
    const d = await previewDecision(set, call as ToolCallInput, context, registry);
    return {
      line,
      item,
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
    return refused(`line ${line}: ${(error as Error).message}`, item);
  }
}
