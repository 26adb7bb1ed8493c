/**
 * What every `toolgate` command shares: where it writes, its exit code, usage errors, reading inputs and
 * loading the policy file. A command lives in its own file and exports one `register…(program, cli)`.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { lintPolicy } from '../policy-file/lint.js';
import { readPolicyFile } from '../policy-file/load.js';
import type { PolicyContextInput, PolicySet } from '../policy-file/policy-set.js';
import type { PolicyIssue } from '../policy-file/types.js';
import { parseJsonText } from '../json-text.js';
import { EXIT } from './exit-codes.js';
import { findingText, issuesText, type Colors } from './render.js';

/** Where the CLI writes, and whether it may colour its output. */
export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Colour and symbols for a terminal. @default false */
  readonly color?: boolean;
  /** Resolves to stop `watch` (the bin never resolves it: ^C ends the process). @default never */
  readonly stop?: Promise<void>;
}

/** One run of the program, as the commands see it. */
export interface Cli {
  readonly io: CliIO;
  readonly c: Colors;
  /** The whole command line (without `node` and the script). */
  readonly argv: readonly string[];
  /** Writes a line (a newline is added when missing) to stdout / stderr. */
  out(text: string): void;
  err(text: string): void;
  /** Sets the exit code `run` resolves with. */
  exit(code: number): void;
}

/** A command: adds itself to the program. */
export type RegisterCommand = (program: Command, cli: Cli) => void;

/** A usage error: printed as `error <message>`, exit 2. */
export class UsageError extends Error {}

export function parseJson(text: string, what: string): unknown {
  try {
    return parseJsonText(text);
  } catch (error) {
    throw new UsageError(`${what} is not valid JSON: ${(error as Error).message}`);
  }
}

/** Reads a file, or standard input for `-`; an unreadable input is a usage error. */
export async function readInput(file: string): Promise<string> {
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

/**
 * Confusable tool names in a loaded file, as lint-style warnings on stderr (the CLI's registries run
 * with `confusables: 'off'`, so no raw process warning is printed).
 */
export function warnConfusables(cli: Cli, set: PolicySet): void {
  const file = set.file ?? '<input>';
  for (const f of lintPolicy(set)) if (f.code === 'confusable-name') cli.err(findingText(file, f, cli.c));
}

/** The exit code for a policy file that did not load: 2 when it could not be read at all, else 1. */
export function refusedExit(issues: readonly PolicyIssue[]): number {
  return issues.length > 0 && issues.every((i) => i.code === 'read') ? EXIT.USAGE : EXIT.POLICY;
}

/**
 * Loads the policy file; a refused file is reported (text or JSON) and sets exit 1, an unreadable one
 * (missing, a directory, no permission) exit 2.
 */
export async function loadPolicy(cli: Cli, file: string, json: boolean | undefined): Promise<PolicySet | null> {
  const result = await readPolicyFile(file);
  if (result.ok) return result.policy;
  if (json) cli.out(JSON.stringify({ ok: false, file, issues: result.issues }));
  else cli.err(issuesText(result.issues, cli.c));
  cli.exit(refusedExit(result.issues));
  return null;
}

export interface ContextOptions {
  readonly policy: string;
  readonly agent?: string;
  readonly tenant?: string;
  readonly scopes?: string[];
  readonly json?: boolean;
}

function collectScopes(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), ...value.split(/[\s,]+/).filter((s) => s !== '')];
}

/** The gate context the options ask for. */
export function who(options: ContextOptions): PolicyContextInput {
  return {
    ...(options.agent !== undefined ? { agent: options.agent } : {}),
    ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
    ...(options.scopes !== undefined ? { scopes: options.scopes } : {}),
  };
}

/** --policy, --agent, --tenant, --scopes and --json. */
export function contextOptions(command: Command): Command {
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
