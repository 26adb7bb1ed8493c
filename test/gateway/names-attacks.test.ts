/**
 * Names written the way clients see them where the gateway matches another form, through the real
 * `toolgate gateway` process: a limit naming an unprefixed upstream's tool as `rec:refund` (it counted
 * nothing) and a `prompts:` deny naming `docs:leak` (it matched nothing, the prompt was served) are refused
 * at start and on reload with the form to write; the documented forms work; `toolgate lint` warns.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { run } from '../../src/cli/program.js';
import { cleanupsAfterEach, DOCS, emptyFile, RECORDING, stdioUpstream, tempDir, writePolicy } from '../harness.js';
import { runToExit, stdioGateway } from './fixtures/spawn.js';

const cleanups = cleanupsAfterEach();

function write(data: Record<string, unknown>): { dir: string; policy: string } {
  const dir = tempDir('names');
  return { dir, policy: writePolicy(dir, data) };
}

/** `toolgate gateway --policy FILE` as a process that must refuse to start: its exit code and stderr. */
const refusedStart = (policy: string) => runToExit(['--policy', policy]);

/** The gateway over stdio, once its upstream lists `tool`. */
const gatewayProcess = (policy: string, tool: string) =>
  stdioGateway(cleanups, ['--policy', policy, '--no-watch'], tool);

const recording = (record: string) => ({
  version: 1,
  gateway: {
    upstreams: {
      rec: { ...stdioUpstream(RECORDING, { RECORD: record }), prefix: false },
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
    const record = emptyFile(dir, 'rec.jsonl');
    const good = { ...recording(record), limits: [{ name: 'refunds', tools: ['refund'], max: 2, window: '1h' }] };
    writeFileSync(policy, stringify(good));
    const { client, pid, stderr } = await gatewayProcess(policy, 'refund');
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
    gateway: { upstreams: { docs: stdioUpstream(DOCS) }, pin: 'off' },
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
    const { client } = await gatewayProcess(policy, 'docs:echo');
    await expect(client.getPrompt({ name: 'docs:leak' })).rejects.toThrow(/no-leak/);
    const listed = (await client.listPrompts()).prompts.map((p) => p.name);
    expect(listed).not.toContain('docs:leak');
  });
});
