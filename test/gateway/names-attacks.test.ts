/**
 * Names written the way clients see them where the gateway matches another form, through the real
 * `toolgate gateway` process: a limit naming an unprefixed upstream's tool as `rec:refund` (it counted
 * nothing) and a `prompts:` deny naming `docs:leak` (it matched nothing, the prompt was served) are refused
 * at start and on reload with the form to write; the documented forms work; `toolgate lint` warns.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { run } from '../../src/cli/program.js';

const ROOT = process.cwd();
const MAIN = join(ROOT, 'src/cli/main.ts');
const DOCS = join(ROOT, 'test/gateway/fixtures/docs-server.ts');
const RECORDING = join(ROOT, 'test/gateway/fixtures/recording-server.ts');
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

function write(data: Record<string, unknown>): { dir: string; policy: string } {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-names-')));
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, stringify(data));
  return { dir, policy };
}

/** `toolgate gateway --policy FILE` as a process that must refuse to start: its exit code and stderr. */
function refusedStart(policy: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'gateway', '--policy', policy], {
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill(), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

async function gatewayProcess(policy: string) {
  let stderr = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', MAIN, 'gateway', '--policy', policy, '--no-watch'],
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(transport);
  cleanups.push(() => client.close());
  for (let i = 0; (await client.listTools()).tools.length === 0; i++) {
    if (i > 300) throw new Error(`no upstream:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { client, pid: transport.pid!, stderr: () => stderr };
}

const recording = (record: string) => ({
  version: 1,
  gateway: {
    upstreams: {
      rec: { command: process.execPath, args: ['--import', 'tsx', RECORDING], env: { RECORD: record }, prefix: false },
    },
    pin: 'off',
  },
  rules: [{ name: 'rest', result: 'allow' }],
});

async function lint(policy: string): Promise<string> {
  let out = '';
  await run(['lint', policy], { stdout: (t) => (out += t), stderr: (t) => (out += t) });
  return out;
}

describe("a limit naming an unprefixed upstream's tool under its namespace", { timeout: 180_000 }, () => {
  it('is refused at start, naming the limit and the name to write; lint warns', async () => {
    const { dir, policy } = write({
      ...recording('/dev/null'),
      limits: [{ name: 'refunds', tools: ['rec:refund'], max: 2, window: '1h' }],
    });
    const { code, stderr } = await refusedStart(policy);
    expect(code).toBe(2);
    expect(stderr).toMatch(/limit "refunds" names "rec:refund".*prefix: false.*write "refund"/);
    expect(await lint(policy)).toMatch(/limit-undeclared-tool.*write "refund"|write "refund".*limit-undeclared-tool/s);
    // costs: spelled the same way: refused too.
    writeFileSync(
      policy,
      stringify({ ...recording('/dev/null'), limits: [{ name: 'spend', costs: { 'rec:refund': 5 }, max: 10 }] }),
    );
    expect((await refusedStart(policy)).stderr).toMatch(/limit "spend" names "rec:refund".*write "refund"/);
    void dir;
  });

  it('the own name counts (2 of 5 run); a reload to the namespaced form is refused and the limit stays', async () => {
    const { dir, policy } = write({});
    const record = join(dir, 'rec.jsonl');
    writeFileSync(record, '');
    const good = { ...recording(record), limits: [{ name: 'refunds', tools: ['refund'], max: 2, window: '1h' }] };
    writeFileSync(policy, stringify(good));
    const { client, pid, stderr } = await gatewayProcess(policy);
    const refund = (i: number) => client.callTool({ name: 'refund', arguments: { order: `o${i}`, amount: 5 } });
    for (let i = 0; i < 5; i++) await refund(i);
    const ran = () =>
      readFileSync(record, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"refund"')).length;
    expect(ran()).toBe(2);
    writeFileSync(policy, stringify({ ...good, limits: [{ name: 'refunds', tools: ['rec:refund'], max: 2 }] }));
    process.kill(pid, 'SIGHUP');
    await expect.poll(() => stderr(), { timeout: 30_000 }).toMatch(/limit "refunds" names "rec:refund"/);
    await refund(9);
    expect(ran()).toBe(2);
  });
});

describe('a prompts: rule naming a prompt as clients see it (docs:leak)', { timeout: 180_000 }, () => {
  const docs = {
    version: 1,
    gateway: { upstreams: { docs: { command: process.execPath, args: ['--import', 'tsx', DOCS] } }, pin: 'off' },
    rules: [{ name: 'rest', result: 'allow' }],
  };
  it('is refused at start with the form to write; the documented form (namespace + own name) denies', async () => {
    const { policy } = write({
      ...docs,
      prompts: [
        { name: 'no-leak', prompts: 'docs:leak', result: 'deny' },
        { name: 'p', prompts: '*', result: 'allow' },
      ],
    });
    const { code, stderr } = await refusedStart(policy);
    expect(code).toBe(2);
    expect(stderr).toMatch(/prompts rule "no-leak" names "docs:leak".*namespace: "docs" with prompts: "leak"/);

    writeFileSync(
      policy,
      stringify({
        ...docs,
        prompts: [
          { name: 'no-leak', namespace: 'docs', prompts: 'leak', result: 'deny' },
          { name: 'p', prompts: '*', result: 'allow' },
        ],
      }),
    );
    const { client } = await gatewayProcess(policy);
    await expect(client.getPrompt({ name: 'docs:leak' })).rejects.toThrow(/no-leak/);
    const listed = (await client.listPrompts()).prompts.map((p) => p.name);
    expect(listed).not.toContain('docs:leak');
  });
});
