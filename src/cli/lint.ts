/** `toolgate lint`: check a policy file. */
import type { Command } from 'commander';
import { lintPolicyFile } from '../policy-file/lint.js';
import { refusedExit, type Cli } from './context.js';
import { EXIT, exitCodes } from './exit-codes.js';
import { lintText } from './render.js';

export function registerLint(program: Command, cli: Cli): void {
  const command = program
    .command('lint')
    .description(
      'Check a policy file: load errors, shadowed and never-matching rules, canonical collisions, confusable names, unknown tags, undeclared tools and agents, tenants granting tools no agent declares.',
    )
    .argument('<file>', 'the policy file')
    .option('--json', 'print the report as JSON')
    .addHelpText('after', `\nFindings are errors or warnings; only errors make the exit code 1.`);
  exitCodes(command, [
    [EXIT.OK, 'no errors (warnings may have been found)'],
    [EXIT.POLICY, 'the policy file was refused, or lint found errors'],
    [EXIT.USAGE, 'usage error: a bad option or argument, or the file cannot be read'],
  ]).action(async (file: string, options: { json?: boolean }) => {
    const report = await lintPolicyFile(file);
    cli.out(options.json ? JSON.stringify(report) : lintText(report, cli.c));
    cli.exit(report.loaded ? (report.errors > 0 ? EXIT.POLICY : EXIT.OK) : refusedExit(report.findings));
  });
}
