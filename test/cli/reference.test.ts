// docs/cli.md against `--help`: every command `toolgate --help` lists has a section with each of its
// options and exit codes, and the page names nothing the command does not have.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../src/cli/program.js';
import { compareCommand, docsSection, helpCommands, helpExitCodes, helpOptions } from './reference.js';

const root = join(import.meta.dirname, '..', '..');
const docs = readFileSync(join(root, 'docs', 'cli.md'), 'utf8');

async function help(args: string[]): Promise<string> {
  let stdout = '';
  let stderr = '';
  const code = await run([...args, '--help'], { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  expect(code, `toolgate ${args.join(' ')} --help`).toBe(0);
  expect(stderr, 'help goes to stdout').toBe('');
  return stdout;
}

describe('docs/cli.md, the CLI reference', () => {
  it('has a section for every command, with every option and exit code its --help lists, and no others', async () => {
    const top = await help([]);
    const commands = helpCommands(top);
    expect(commands).toEqual(expect.arrayContaining(['explain', 'lint', 'check', 'watch', 'mcp-proxy', 'demo']));
    const problems: string[] = [];
    for (const command of commands) problems.push(...compareCommand(command, await help([command]), docs));
    expect(problems).toEqual([]);
    // The program's own exit codes and options.
    for (const line of helpExitCodes(top)) {
      const [code, meaning] = line.split(/ {2}(.*)/);
      expect(docs).toContain(`| ${code} | ${meaning} |`);
    }
    expect(helpOptions(top)).toEqual(['-h, --help']);
  });

  it('the comparison fails when --help gains an option, an exit code or a command the page lacks', async () => {
    const check = await help(['check']);
    expect(compareCommand('check', check, docs)).toEqual([]);
    const withOption = check.replace('Options:\n', 'Options:\n  --max-rows <n>         stop after n rows\n');
    expect(compareCommand('check', withOption, docs)).toEqual([
      'check: option `--max-rows <n>` is in --help but not in docs/cli.md',
    ]);
    const withCode = check.replace('Exit codes:\n', 'Exit codes:\n  5  the input was too large\n');
    expect(compareCommand('check', withCode, docs)).toEqual([
      'check: exit code "5  the input was too large" is in --help but not in docs/cli.md',
    ]);
    const withoutOption = check.replace(/^ {2}--json .*\n/m, '');
    expect(compareCommand('check', withoutOption, docs)).toEqual([
      'check: option `--json` is in docs/cli.md but not in --help',
    ]);
    expect(compareCommand('frobnicate', check, docs)).toEqual(['docs/cli.md has no "## toolgate frobnicate" section']);
    expect(docsSection(docs, 'check')).toContain('--fail-on');
  });
});
