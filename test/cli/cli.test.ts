import { execFile, spawn } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { run, runDemo } from '../../src/cli/program.js';

const root = join(import.meta.dirname, '..', '..');
const fixture = (name: string): string => join(root, 'test', 'policy-file', 'fixtures', name);
const policy = fixture('concierge.yaml');
const exec = promisify(execFile);

async function cli(args: string[], color = false): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await run(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), color });
  return { code, stdout, stderr };
}

/** Spawns the CLI from source with tsx, as a user's shell would (piped, so no colour). */
async function spawnCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(
      process.execPath,
      ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), ...args],
      { cwd: root },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('toolgate (in-process)', () => {
  it('prints help for the program and each command, with the exit codes', async () => {
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    for (const command of ['explain', 'lint', 'check', 'watch', 'demo']) expect(top.stdout).toContain(command);
    expect(top.stdout).toContain('3  explain: the call is denied');
    for (const command of ['explain', 'lint', 'check', 'watch']) {
      const help = await cli([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`Usage: toolgate ${command}`);
      expect(help.stdout).toContain('Exit codes:');
    }
  });

  it('explain: a path traversal shows the rule that refused it, exit 3', async () => {
    const { code, stdout } = await cli([
      'explain',
      '--policy',
      policy,
      '--agent',
      'concierge',
      '--tenant',
      'acme',
      '--scopes',
      'files:read',
      'read_file',
      '{"path":"/data/../etc/passwd"}',
    ]);
    expect(code).toBe(3);
    expect(stdout).toContain('read_file  DENY  (stage policy, by rule "deny_other_reads")');
    expect(stdout).toContain('#2 read_data_only (allow, line 51): not matched');
    expect(stdout).toContain('"/data/../etc/passwd" resolves to "/etc/passwd", does not hold');
    expect(stdout).toContain('#3 deny_other_reads (deny, line 57): matched');
    expect(stdout).not.toContain('\u001b[');
  });

  it('explain: allow is exit 0, ask is exit 4, and --json gives the whole trace', async () => {
    expect((await cli(['explain', '-p', policy, 'read_file', '{"path":"/data/x"}'])).code).toBe(0);
    const ask = await cli([
      'explain',
      '-p',
      policy,
      '--json',
      '--call',
      '{"type":"function","id":"c1","function":{"name":"refund","arguments":"{\\"amount\\":500}"}}',
    ]);
    expect(ask.code).toBe(4);
    const parsed = JSON.parse(ask.stdout) as {
      format: string;
      decision: { effect: string; rule: string };
      rules: unknown[];
    };
    expect(parsed).toMatchObject({ format: 'openai-chat', decision: { effect: 'ask', rule: 'big_refunds_ask' } });
    expect(parsed.rules).toHaveLength(6);
  });

  it('explain: colour on a terminal', async () => {
    const { stdout } = await cli(['explain', '-p', policy, 'read_file', '{"path":"/etc/x"}'], true);
    expect(stdout).toContain('\u001b[31mdeny');
  });

  it('usage errors exit 2: bad JSON, unknown agent, missing options, TOOL and --call together', async () => {
    const bad = await cli(['explain', '-p', policy, 'read_file', '{nope']);
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.stderr).toMatch(/ARGS is not valid JSON/);
    const agent = await cli(['explain', '-p', policy, '-a', 'ghost', 'read_file']);
    expect(agent.code).toBe(2);
    expect(agent.stderr).toMatch(
      /agent "ghost" is not declared in the policy file; declared agents: concierge, researcher/,
    );
    expect((await cli(['explain', 'read_file'])).code).toBe(2);
    expect((await cli(['explain', '-p', policy, '--call', '{}', 'read_file'])).code).toBe(2);
    expect((await cli(['frobnicate'])).code).toBe(2);
  });

  it('a refused policy file is exit 1 with file:line:column for every command', async () => {
    const broken = fixture('broken.yaml');
    for (const args of [
      ['explain', '-p', broken, 'read_file'],
      ['check', '-p', broken, '-'],
      ['lint', broken],
    ]) {
      const { code, stdout, stderr } = await cli(args);
      expect(code).toBe(1);
      expect(stdout + stderr).toContain(`${broken}:7:13`);
    }
    const json = await cli(['explain', '-p', broken, '--json', 'x']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      issues: [
        { line: 7, column: 13 },
        { line: 11, column: 5 },
      ],
    });
  });

  it('lint: clean is exit 0; errors exit 1; --json reports', async () => {
    const clean = await cli(['lint', policy]);
    expect(clean).toMatchObject({ code: 0 });
    expect(clean.stdout).toContain('no problems found');
    const errors = await cli(['lint', fixture('lint-errors.yaml')]);
    expect(errors.code).toBe(1);
    expect(errors.stdout).toContain('lint-errors.yaml:8:13  error    undeclared-agent');
    expect(errors.stdout).toContain('2 errors, 0 warnings');
    const json = JSON.parse((await cli(['lint', '--json', fixture('lint-errors.yaml')])).stdout) as {
      errors: number;
      findings: { code: string }[];
    };
    expect(json.errors).toBe(2);
    expect(json.findings.map((f) => f.code)).toEqual(['undeclared-agent', 'shadowed-rule']);
  });

  it('check: decides every call shape, per-line context, bad lines; table or JSONL', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-check-'));
    const calls = join(dir, 'calls.jsonl');
    await writeFile(
      calls,
      [
        JSON.stringify({ name: 'read_file', arguments: { path: '/data/a.txt' } }),
        JSON.stringify({
          type: 'function',
          id: 'c2',
          function: { name: 'read_file', arguments: '{"path":"/data/../etc/passwd"}' },
        }),
        JSON.stringify({ type: 'function_call', call_id: 'c3', name: 'refund', arguments: '{"amount":500}' }),
        JSON.stringify({ type: 'tool_use', id: 'c4', name: 'github:search', input: {} }),
        '',
        JSON.stringify({ functionCall: { name: 'write_file', args: {} } }),
        JSON.stringify({ call: { name: 'write_file', arguments: {} }, agent: 'concierge', tenant: 'acme' }),
        'not json',
        JSON.stringify({ call: { name: 'read_file', arguments: {} }, agent: 'ghost' }),
      ].join('\n'),
    );
    const rows = (await cli(['check', '-p', policy, '--json', calls])).stdout
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            line: number;
            effect: string;
            rule: string | null;
            layer: string | null;
            by: string;
            reason: string;
          },
      );
    expect(rows.map((r) => [r.line, r.effect, r.rule ?? r.layer ?? r.by])).toEqual([
      [1, 'allow', 'read_data_only'],
      [2, 'deny', 'deny_other_reads'],
      [3, 'ask', 'big_refunds_ask'],
      [4, 'allow', 'github_reads'],
      [6, 'deny', 'fallback'],
      [7, 'deny', 'tenant'],
      [8, 'deny', 'malformed_call'],
      [9, 'deny', 'malformed_call'],
    ]);
    expect(rows[6]!.reason).toMatch(/line 8 is not JSON/);
    expect(rows[7]!.reason).toMatch(/line 9: agent "ghost" is not declared/);
    const table = await cli(['check', '-p', policy, calls]);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^line\s+tool\s+decision\s+by\s+reason$/);
    expect(table.stdout).toMatch(
      /2\s+read_file\s+deny\s+rule "deny_other_reads"\s+Files outside \/data are off limits/,
    );
  });

  it('watch: reports loads and a rejected reload that keeps the policy', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-cliwatch-'));
    const file = join(dir, 'p.yaml');
    await writeFile(file, 'version: 1\nrules: [{ name: a, result: allow, tools: t }]\n');
    let stdout = '';
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const running = run(['watch', '--policy', file, '--json'], {
      stdout: (t) => (stdout += t),
      stderr: () => {},
      stop: stopped,
    });
    const events = (): { event: string; version?: string; kept?: string }[] =>
      stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { event: string });
    const until = async (n: number): Promise<void> => {
      for (let i = 0; i < 500 && events().length < n; i++) await new Promise((r) => setTimeout(r, 20));
    };
    await until(1);
    await writeFile(file, 'version: 1\nrules: [{ name: a, result: nope, tools: t }]\n');
    await until(2);
    await writeFile(file, 'version: 1\nrules: [{ name: b, result: deny, tools: t }]\n');
    await until(3);
    stop();
    expect(await running).toBe(0);
    const [loaded, rejected, reloaded] = events();
    expect(loaded!.event).toBe('loaded');
    expect(rejected).toMatchObject({ event: 'rejected', kept: loaded!.version });
    expect(reloaded!.event).toBe('reloaded');
    expect(reloaded!.version).not.toBe(loaded!.version);
  });

  it('demo: runs examples/demo.ts main(), the gate table and the runner', async () => {
    const result = await cli(['demo']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/REFUSED +layer: tenant/);
    expect(result.stdout).toContain('AgentRunner');
  });
});

describe('toolgate (spawned)', () => {
  it('runs from source: --help, and explain of a traversal exits 3 naming the refusing rule, uncoloured when piped', async () => {
    const help = await spawnCli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: toolgate');
    const explain = await spawnCli(['explain', '-p', policy, 'read_file', '{"path":"/data/../etc/passwd"}']);
    expect(explain.code).toBe(3);
    expect(explain.stdout).toContain('by rule "deny_other_reads"');
    expect(explain.stdout).not.toContain('\u001b[');
    const lint = await spawnCli(['lint', fixture('lint-errors.yaml')]);
    expect(lint.code).toBe(1);
  });

  it('check reads calls from standard input with -', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), 'check', '-p', policy, '--json', '-'],
      { cwd: root },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stdin.end(`${JSON.stringify({ name: 'read_file', arguments: { path: '/etc/shadow' } })}\n`);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ line: 1, tool: 'read_file', effect: 'deny', rule: 'deny_other_reads' });
  });

  it('demo: imports examples/demo.ts main(print) in-process, and runs it with tsx from the built bin', async () => {
    await mkdir(join(root, 'node_modules', '.cache'), { recursive: true });
    const dir = await mkdtemp(join(root, 'node_modules', '.cache', 'toolgate-demo-'));
    await mkdir(join(dir, 'examples'));
    await writeFile(join(dir, 'package.json'), '{ "type": "module" }\n');
    await writeFile(
      join(dir, 'examples', 'demo.ts'),
      "import { fileURLToPath } from 'node:url';\nexport async function main(print: (line: string) => void = console.log): Promise<void> { print('demo ran'); }\nif (process.argv[1] === fileURLToPath(import.meta.url)) await main();\n",
    );
    const base = pathToFileURL(join(dir, 'examples') + '/');
    let stdout = '';
    expect(await runDemo({ stdout: (t) => (stdout += t), stderr: () => {} }, base)).toBe(0);
    expect(stdout).toBe('demo ran\n');
    const bin = join(root, 'dist', 'cli', 'program.js');
    if (!existsSync(bin)) await exec('npm', ['run', 'build'], { cwd: root });
    const script = `const m = await import(${JSON.stringify(pathToFileURL(bin).href)}); process.exitCode = await m.runDemo({ stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) }, new URL(${JSON.stringify(base.href)}));`;
    const built = await exec(process.execPath, ['--input-type=module', '-e', script], { cwd: dir });
    expect(built.stdout).toBe('demo ran\n');
    await rm(dir, { recursive: true, force: true });
  });

  it('the built bin has a shebang, is executable and runs', async () => {
    const bin = join(root, 'dist', 'cli', 'main.js');
    if (!existsSync(bin)) await exec('npm', ['run', 'build'], { cwd: root });
    accessSync(bin, constants.X_OK);
    const { stdout } = await exec(bin, ['lint', policy], { cwd: root });
    expect(stdout).toContain('no problems found');
    const pkg = (await import('../../package.json', { with: { type: 'json' } })).default as {
      bin: Record<string, string>;
    };
    expect(pkg.bin['toolgate']).toBe('./dist/cli/main.js');
  });
});
