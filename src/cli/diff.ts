/**
 * `toolgate diff OLD NEW`: what a change to a policy file does, before it is in force. Every region of
 * calls decided differently, with an example call and the rules on each side; "may change" where a
 * condition could not be decided. For CI: `--fail-on widen|narrow|any`, `--json`, `--markdown` (a
 * pull-request comment). A file that does not load is reported as `lint` reports it, and nothing is
 * compared.
 */
import type { Command } from 'commander';
import { diffMarkdown, diffPolicies, diffText, type PolicyDiff } from '../policy-file/diff/index.js';
import { lintPolicyFile } from '../policy-file/lint.js';
import { readPolicyFile } from '../policy-file/load.js';
import { refusedExit, UsageError, type Cli } from './context.js';
import { EXIT, exitCodes, USAGE_LINE } from './exit-codes.js';
import { lintText } from './render.js';

/** What `--fail-on` fails on. */
export type DiffFailOn = 'widen' | 'narrow' | 'any';

/** Whether a diff has what `failOn` names: a widening (or narrowing) region, setting, or a region that may change. */
export function diffFails(diff: PolicyDiff, failOn: DiffFailOn): boolean {
  if (failOn === 'widen') return diff.widens;
  if (failOn === 'narrow') return diff.narrows;
  return !diff.equal || diff.settings.length > 0;
}

export function registerDiff(program: Command, cli: Cli): void {
  const command = program
    .command('diff')
    .description(
      'Compare two policy files by what they decide: every region of calls (by agent, tenant, tool and arguments) decided differently, each with an example call and the rules on each side.',
    )
    .argument('<old>', 'the policy file in force (YAML or JSON)')
    .argument('<new>', 'the changed policy file')
    .option(
      '--fail-on <what>',
      'widen, narrow or any: exit 1 when the change widens access, narrows it, or changes anything',
    )
    .option('--json', 'print the diff as JSON')
    .option('--markdown', 'print the diff as Markdown (a pull-request comment)')
    .option(
      '--time-limit <ms>',
      'stop searching after this many milliseconds; what is left may change (default 20000)',
    );
  exitCodes(command, [
    [EXIT.OK, 'compared (with --fail-on: nothing it names was found)'],
    [
      EXIT.POLICY,
      'a policy file was refused, or with --fail-on: the change widens, narrows or changes what --fail-on names',
    ],
    USAGE_LINE,
  ]).action(
    async (
      oldFile: string,
      newFile: string,
      options: { failOn?: string; json?: boolean; markdown?: boolean; timeLimit?: string },
    ) => {
      if (options.failOn !== undefined && !['widen', 'narrow', 'any'].includes(options.failOn))
        throw new UsageError(`--fail-on must be widen, narrow or any, got ${JSON.stringify(options.failOn)}`);
      if (options.json && options.markdown) throw new UsageError('give --json or --markdown, not both');
      const timeLimitMs = options.timeLimit === undefined ? undefined : Number(options.timeLimit);
      if (timeLimitMs !== undefined && !(Number.isInteger(timeLimitMs) && timeLimitMs > 0))
        throw new UsageError(
          `--time-limit must be a positive number of milliseconds, got ${JSON.stringify(options.timeLimit)}`,
        );
      const [a, b] = await Promise.all([readPolicyFile(oldFile), readPolicyFile(newFile)]);
      if (!a.ok || !b.ok) {
        // Reported as lint reports a file that does not load; nothing is compared.
        const reports = await Promise.all([
          a.ok ? null : lintPolicyFile(oldFile),
          b.ok ? null : lintPolicyFile(newFile),
        ]);
        const refused = reports.filter((r) => r !== null);
        if (options.json) cli.out(JSON.stringify({ ok: false, refused }));
        else for (const r of refused) cli.err(lintText(r, cli.c));
        cli.exit(Math.max(...[a, b].map((r) => (r.ok ? EXIT.OK : refusedExit(r.issues)))));
        return;
      }
      const diff = await diffPolicies(a.policy, b.policy, timeLimitMs === undefined ? {} : { timeLimitMs });
      if (options.json) cli.out(JSON.stringify(diff));
      else if (options.markdown) cli.out(diffMarkdown(diff));
      else cli.out(diffText(diff, cli.c));
      cli.exit(options.failOn !== undefined && diffFails(diff, options.failOn as DiffFailOn) ? EXIT.POLICY : EXIT.OK);
    },
  );
}
