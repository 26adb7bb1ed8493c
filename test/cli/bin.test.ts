// The built `toolgate` bin, run as a user's shell runs it (piped: no colour), for every command: a fresh
// build of this tree into a temporary directory (so that a stale dist/ cannot answer for the source).
import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareCommand, helpCommands } from './reference.js';
import { SHOP } from './fixtures.js';

const root = join(import.meta.dirname, '..', '..');
const exec = promisify(execFile);
let out = '';
let bin = '';
const at = (name: string): string => join(out, 'files', name);

beforeAll(async () => {
  // Inside the project, so that the build resolves its runtime dependencies from node_modules.
  mkdirSync(join(root, 'node_modules/.cache'), { recursive: true });
  out = mkdtempSync(join(root, 'node_modules/.cache/toolgate-bin-'));
  await exec(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', join(out, 'dist')],
    { cwd: root },
  );
  cpSync(join(root, 'schema'), join(out, 'schema'), { recursive: true });
  mkdirSync(join(out, 'files'));
  bin = join(out, 'dist', 'cli', 'main.js');
  await writeFile(at('shop.yaml'), SHOP);
}, 180_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** Runs the built bin; resolves with its exit code and output. `stdin` is piped in when given. */
function toolgate(args: string[], stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: out, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

describe('the built toolgate bin', () => {
  it('--help of every command matches docs/cli.md', async () => {
    const docs = await readFile(join(root, 'docs', 'cli.md'), 'utf8');
    const top = await toolgate(['--help']);
    expect(top.code).toBe(0);
    const problems: string[] = [];
    for (const command of helpCommands(top.stdout)) {
      const help = await toolgate([command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stderr, command).toBe('');
      problems.push(...compareCommand(command, help.stdout, docs));
    }
    expect(problems).toEqual([]);
  });

  it('explain: rule_error named with why; ARGS not an object is exit 2; confusables are findings, not process warnings', async () => {
    const tip = await toolgate(['explain', '-p', at('shop.yaml'), 'tip', '{"amount":"5"}']);
    expect(tip.code).toBe(3);
    expect(tip.stdout.split('\n')[0]).toBe(
      'tip  DENY  (stage policy, by rule_error: allow rule "small_tips" could not be judged)',
    );
    const args = await toolgate(['explain', '-p', at('shop.yaml'), 'search', '"x"']);
    expect(args.code).toBe(2);
    expect(args.stderr).toContain('ARGS is valid JSON but not an object');
    await writeFile(at('confusable.yaml'), 'version: 1\ntools:\n  read_file: {}\n  rеad_file: {}\nrules: []\n');
    const confusable = await toolgate(['explain', '-p', at('confusable.yaml'), 'read_file']);
    expect(confusable.code).toBe(3);
    expect(confusable.stderr).toContain(':4:3  warning  confusable-name');
    expect(confusable.stderr).not.toMatch(/\(node:\d+\)|Warning|--trace-warnings/);
    const none = await toolgate(['explain', '-p', at('missing.yaml'), 'x']);
    expect(none.code).toBe(2);
  });

  it('check: blank arguments are refused; --fail-on exits 3 / 4; whole messages from stdin', async () => {
    const blank = '{"id":"c","type":"function","function":{"name":"search","arguments":"  "}}\n';
    const refused = await toolgate(['check', '--json', '-p', at('shop.yaml'), '-'], blank);
    expect(refused.code).toBe(0);
    expect(JSON.parse(refused.stdout)).toMatchObject({ effect: 'deny', by: 'malformed_arguments' });
    expect(refused.stderr).toContain('1 call: 0 allowed, 1 denied, 0 need approval');
    expect((await toolgate(['check', '--fail-on', 'deny', '-p', at('shop.yaml'), '-'], blank)).code).toBe(3);
    const message = JSON.stringify({
      role: 'assistant',
      content: [
        { type: 'text', text: 'ok' },
        { type: 'tool_use', id: 'a', name: 'search', input: {} },
        { type: 'tool_use', id: 'b', name: 'refund', input: { amount: 1 } },
      ],
    });
    const ask = await toolgate(['check', '--fail-on', 'ask', '-p', at('shop.yaml'), '-'], message);
    expect(ask.code).toBe(4);
    expect(ask.stdout).toMatch(/^1\.1\s+search\s+allow/m);
    expect(ask.stdout).toMatch(/^1\.2\s+refund\s+ask/m);
    expect(ask.stdout).toContain('2 calls: 1 allowed, 0 denied, 1 needs approval (fails --fail-on ask)');
  });

  it('lint: a .json file with a trailing comma is refused at line:column; range shadowing; unreadable is exit 2', async () => {
    await writeFile(at('p.json'), '{\n  "version": 1,\n  "rules": [],\n}\n');
    const json = await toolgate(['lint', at('p.json')]);
    expect(json.code).toBe(1);
    expect(json.stdout).toContain('p.json:3:14  error    json  a trailing comma before "}"');
    await writeFile(
      at('ranges.yaml'),
      `version: 1
tools:
  tip: {}
rules:
  - { name: big, tools: tip, result: deny, when: { amount: { gt: 100 } } }
  - { name: huge, tools: tip, result: ask, when: { amount: { gt: 200 } } }
`,
    );
    const ranges = await toolgate(['lint', at('ranges.yaml')]);
    expect(ranges.code).toBe(1);
    expect(ranges.stdout).toContain(
      'ranges.yaml:6:5  error    shadowed-rule  rule "huge" (ask) is shadowed by rule "big"',
    );
    expect((await toolgate(['lint', at('missing.yaml')])).code).toBe(2);
  });

  it('watch: ends on SIGTERM with 0 after a load, and 2 when the file cannot be read', async () => {
    for (const [file, expected] of [
      [at('shop.yaml'), 0],
      [at('missing.yaml'), 2],
    ] as const) {
      const child = spawn(process.execPath, [bin, 'watch', '-p', file], {
        cwd: out,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const started = new Promise<void>((resolve) => {
        const seen = (chunk: Buffer): void => {
          output += chunk.toString();
          if (/loaded|rejected/.test(output)) resolve();
        };
        child.stdout.on('data', seen);
        child.stderr.on('data', seen);
      });
      const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      await started;
      child.kill('SIGTERM');
      expect(await closed, output).toBe(expected);
    }
  });

  it('mcp-proxy --help: stdout, "toolgate mcp-proxy", exit codes', async () => {
    const help = await toolgate(['mcp-proxy', '--help']);
    expect(help.code).toBe(0);
    expect(help.stderr).toBe('');
    expect(help.stdout).toMatch(/^Usage: toolgate mcp-proxy /);
    expect(help.stdout).toContain('Exit codes:\n  0  clean shutdown');
  });
});
