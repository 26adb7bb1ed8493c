/**
 * The `toolgate` command: explain, lint, check, watch and demo over policy files.
 *
 * Exit codes (also in `toolgate --help`):
 *   0  success (explain: the call is allowed; lint: no errors)
 *   1  the policy file was refused, or lint found errors
 *   2  usage error: a bad option or argument, an unreadable input, an unknown agent or tenant
 *   3  explain: the call is denied
 *   4  explain: the call needs approval (a rule answers ask)
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { isToolgateError } from '../errors.js';
import type { ToolCallInput } from '../formats/index.js';
import { decideCall, explainCall } from '../policy-file/explain.js';
import { lintPolicyFile } from '../policy-file/lint.js';
import { readPolicyFile } from '../policy-file/load.js';
import type { PolicyContextInput, PolicySet } from '../policy-file/policy-set.js';
import { watchPolicyFile } from '../policy-file/watch.js';
import { colors, effectText, explainText, issuesText, lintText, table } from './render.js';

/** Where the CLI writes, and whether it may colour its output. */
export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Colour and symbols for a terminal. @default false */
  readonly color?: boolean;
  /** Resolves to stop `watch` (the bin never resolves it: ^C ends the process). @default never */
  readonly stop?: Promise<void>;
}

export const EXIT = { OK: 0, POLICY: 1, USAGE: 2, DENIED: 3, ASK: 4 } as const;

const EXIT_HELP = `
Exit codes:
  0  success (explain: the call is allowed; lint: no errors)
  1  the policy file was refused, or lint found errors
  2  usage error (bad option or argument, unreadable input, unknown agent or tenant)
  3  explain: the call is denied
  4  explain: the call needs approval (a rule answers ask)`;

class UsageError extends Error {}

interface ContextOptions {
  readonly policy: string;
  readonly agent?: string;
  readonly tenant?: string;
  readonly scopes?: string[];
  readonly json?: boolean;
}

function collectScopes(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), ...value.split(/[\s,]+/).filter((s) => s !== '')];
}

function who(options: ContextOptions): PolicyContextInput {
  return {
    ...(options.agent !== undefined ? { agent: options.agent } : {}),
    ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
    ...(options.scopes !== undefined ? { scopes: options.scopes } : {}),
  };
}

function contextOptions(command: Command): Command {
  return command
    .requiredOption('-p, --policy <file>', 'the policy file (YAML or JSON)')
    .option('-a, --agent <name>', 'an agent declared in the policy file (default: one that declares every tool)')
    .option('-t, --tenant <id>', 'a tenant declared in the policy file (default: no tenant layer)')
    .option(
      '-s, --scopes <scopes>',
      "the caller's capability scopes, comma-separated; repeatable (default: no caller layer)",
      collectScopes,
    )
    .option('--json', 'print JSON instead of text');
}

/**
 * Runs the command line `argv` (without `node` and the script) and resolves with the exit code. Never
 * calls process.exit, so tests can run it in-process.
 */
export async function run(argv: readonly string[], io: CliIO): Promise<number> {
  const c = colors(io.color === true);
  const out = (text: string): void => io.stdout(text.endsWith('\n') ? text : `${text}\n`);
  const err = (text: string): void => io.stderr(text.endsWith('\n') ? text : `${text}\n`);
  let code: number = EXIT.OK;

  const load = async (file: string, json: boolean | undefined): Promise<PolicySet | null> => {
    const result = await readPolicyFile(file);
    if (result.ok) return result.policy;
    if (json) out(JSON.stringify({ ok: false, file, issues: result.issues }));
    else err(issuesText(result.issues, c));
    code = EXIT.POLICY;
    return null;
  };

  const program = new Command('toolgate')
    .description('Decide, explain and lint AI-agent tool-call permissions from a toolgate policy file.')
    .addHelpText('after', EXIT_HELP)
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout(s),
      writeErr: (s) => io.stderr(s),
      outputError: (s, write) => write(c.red(s)),
    });

  contextOptions(
    program
      .command('explain')
      .description(
        'Decide one call and show why: the canonical name, each allowlist layer, each rule tried (and each condition), the handler.',
      )
      .argument('[tool]', 'the tool name, as the model would send it')
      .argument('[args]', 'the arguments as JSON (default: {})')
      .addOption(
        new Option(
          '--call <json>',
          'a whole call in any supported shape (OpenAI, Anthropic, Gemini, toolgate) instead of TOOL and ARGS',
        ),
      ),
  )
    .addHelpText(
      'after',
      `\nExample:\n  toolgate explain --policy policy.yaml --agent concierge --tenant acme --scopes files:read read_file '{"path":"/data/../etc/passwd"}'\n${EXIT_HELP}`,
    )
    .action(async (tool: string | undefined, args: string | undefined, options: ContextOptions & { call?: string }) => {
      if ((tool === undefined) === (options.call === undefined))
        throw new UsageError('give either TOOL [ARGS] or --call JSON');
      const set = await load(options.policy, options.json);
      if (!set) return;
      let call: ToolCallInput;
      if (options.call !== undefined) call = parseJson(options.call, '--call') as ToolCallInput;
      else call = { name: tool!, arguments: args === undefined ? {} : parseJson(args, 'ARGS') };
      const explanation = await explainCall(set, call, who(options));
      out(options.json ? JSON.stringify(explanation) : explainText(explanation, c));
      code =
        explanation.decision.effect === 'allow'
          ? EXIT.OK
          : explanation.decision.effect === 'deny'
            ? EXIT.DENIED
            : EXIT.ASK;
    });

  program
    .command('lint')
    .description(
      'Check a policy file: load errors, shadowed and never-matching rules, canonical collisions, confusable names, unknown tags, undeclared tools and agents, tenants granting tools no agent declares.',
    )
    .argument('<file>', 'the policy file')
    .option('--json', 'print the report as JSON')
    .addHelpText('after', `\nFindings are errors or warnings; only errors make the exit code 1.\n${EXIT_HELP}`)
    .action(async (file: string, options: { json?: boolean }) => {
      const report = await lintPolicyFile(file);
      out(options.json ? JSON.stringify(report) : lintText(report, c));
      code = report.errors > 0 ? EXIT.POLICY : EXIT.OK;
    });

  contextOptions(
    program
      .command('check')
      .description(
        'Decide a batch of calls, one JSON value per line: a call in any supported shape, or { "call": CALL, "agent"?, "tenant"?, "scopes"? } to set who asks per line.',
      )
      .argument('<calls>', 'a JSONL file of calls, or - for standard input'),
  )
    .addHelpText(
      'after',
      `\nPrints a table, or one JSON object per call with --json. Decides only: nothing runs, no handler is asked.\n${EXIT_HELP}`,
    )
    .action(async (file: string, options: ContextOptions) => {
      const set = await load(options.policy, options.json);
      if (!set) return;
      const text = await readInput(file);
      const registry = set.registry();
      const rows: string[][] = [];
      let n = 0;
      for (const [i, line] of text.split('\n').entries()) {
        if (line.trim() === '') continue;
        n++;
        const row = await checkLine(set, registry, line, i + 1, options);
        if (options.json) out(JSON.stringify(row));
        else
          rows.push([
            String(row.line),
            row.tool,
            effectText(row.effect, c),
            row.layer ? `layer ${row.layer}` : row.rule ? `rule ${row.rule}` : row.by,
            row.reason,
          ]);
      }
      if (!options.json) out(n === 0 ? 'no calls' : table(rows, ['line', 'tool', 'decision', 'by', 'reason'], c));
    });

  program
    .command('watch')
    .description(
      'Load a policy file and reload it on every change; a reload that fails keeps the policy in force and says why.',
    )
    .requiredOption('-p, --policy <file>', 'the policy file')
    .option('--json', 'print one JSON object per event')
    .addHelpText('after', `\nRuns until interrupted (^C).\n${EXIT_HELP}`)
    .action(async (options: { policy: string; json?: boolean }) => {
      const stamp = (): string => new Date().toISOString();
      const watch = watchPolicyFile(options.policy, {
        onLoad: (set, previous) => {
          const event = {
            event: previous ? 'reloaded' : 'loaded',
            time: stamp(),
            file: options.policy,
            version: set.version,
            rules: set.rules.length,
            tools: set.tools.length,
            agents: set.agents.size,
            tenants: set.tenants.size,
          };
          out(
            options.json
              ? JSON.stringify(event)
              : `${c.green(event.event)} ${options.policy}: policy ${set.version} (${set.rules.length} rules, ${set.tools.length} tools, ${set.agents.size} agents, ${set.tenants.size} tenants)`,
          );
        },
        onError: (issues, kept) => {
          const event = { event: 'rejected', time: stamp(), file: options.policy, kept: kept?.version ?? null, issues };
          if (options.json) out(JSON.stringify(event));
          else
            out(
              `${c.red('rejected')} ${options.policy}: ${kept ? `keeping policy ${kept.version}` : 'no policy in force'}\n${issuesText(issues, c)}`,
            );
        },
      });
      const first = await watch.ready;
      if (!first) code = EXIT.POLICY;
      await (io.stop ?? new Promise<void>(() => {}));
      watch.close();
    });

  program
    .command('mcp-proxy')
    .description(
      'Run a policy-enforcing MCP gateway in front of an upstream MCP server (see toolgate mcp-proxy --help).',
    )
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async () => {
      // The gateway parses its own arguments (everything after `mcp-proxy`); loaded only when used, so
      // the other commands never load the MCP SDK.
      const { runMcpProxy } = await import('./mcp-proxy.js');
      code = await runMcpProxy(argv.slice(argv.indexOf('mcp-proxy') + 1), { stderr: (text) => io.stderr(text) });
    });

  program
    .command('gateway')
    .description(
      'Run the MCP gateway in front of the upstream servers of the policy file (see toolgate gateway --help).',
    )
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async () => {
      const { runGateway } = await import('./gateway.js');
      code = await runGateway(argv.slice(argv.indexOf('gateway') + 1), { stderr: (text) => io.stderr(text) });
    });

  program
    .command('demo')
    .description('Run the demo (what `npm run demo` runs).')
    .action(async () => {
      code = await runDemo(io);
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (
        error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.help' ||
        error.code === 'commander.version'
      )
        return EXIT.OK;
      return error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    if (error instanceof UsageError || isToolgateError(error)) {
      err(`${c.red('error')} ${(error as Error).message}`);
      return EXIT.USAGE;
    }
    err(`${c.red('error')} ${error instanceof Error ? error.message : String(error)}`);
    return EXIT.USAGE;
  }
  return code;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${what} is not valid JSON: ${(error as Error).message}`);
  }
}

async function readInput(file: string): Promise<string> {
  try {
    if (file === '-') {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    }
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
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

/**
 * Runs examples/demo.ts's `main(print)`: the compiled examples/demo.js where one was built, else the
 * TypeScript source — imported directly under tsx (`npm run toolgate`, the tests), or run with
 * `node --import tsx` (what `npm run demo` does) when plain Node cannot import TypeScript, as from the
 * built bin in a clone.
 */
export async function runDemo(
  io: Pick<CliIO, 'stdout' | 'stderr'>,
  base: URL = new URL('../../examples/', import.meta.url),
): Promise<number> {
  const out = (line: string): void => io.stdout(`${line}\n`);
  const err = (line: string): void => io.stderr(`${line}\n`);
  const js = new URL('demo.js', base);
  const ts = new URL('demo.ts', base);
  const url = existsSync(js) ? js : existsSync(ts) ? ts : null;
  if (url === null) {
    err('the demo is not in this installation (examples/demo.ts is not here); run it from a clone with `npm run demo`');
    return EXIT.USAGE;
  }
  let mod: { main?: (print?: (line: string) => void) => unknown };
  try {
    mod = (await import(url.href)) as typeof mod;
  } catch (error) {
    if (url === ts && (error as NodeJS.ErrnoException).code === 'ERR_UNKNOWN_FILE_EXTENSION')
      return runWithTsx(fileURLToPath(ts), io);
    err(`cannot load the demo from ${fileURLToPath(url)}: ${(error as Error).message}`);
    return EXIT.USAGE;
  }
  if (typeof mod.main !== 'function') {
    err(`${fileURLToPath(url)} exports no main(print) function`);
    return EXIT.USAGE;
  }
  await mod.main((line: string) => out(line));
  return EXIT.OK;
}

function runWithTsx(file: string, io: Pick<CliIO, 'stdout' | 'stderr'>): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: dirname(dirname(file)),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk: Buffer) => io.stdout(chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => io.stderr(chunk.toString()));
    child.on('error', (error) => {
      io.stderr(`cannot run the demo with tsx: ${error.message}; run \`npm run demo\` in a clone\n`);
      resolve(EXIT.USAGE);
    });
    child.on('close', (code) => resolve(code === 0 ? EXIT.OK : EXIT.USAGE));
  });
}
