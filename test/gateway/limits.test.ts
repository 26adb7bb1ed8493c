// Issue 22 (and 21): the policy file's `limits:` through the real `toolgate gateway` process. On b5c000b the
// gateway built no limiter: under `max: 2` per hour the upstream ran 4 of 4 echo calls. Now the call past the
// max is refused with the limit's name and the retry time, refused calls count, a reload swaps the limiter,
// and across two `--stateless` replicas on shared counters (Redis, PostgreSQL) the total is exact.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { PG_URL, REDIS_URL, uniqueName } from '../stores/servers.js';

const ROOT = process.cwd();
const MAIN = join(ROOT, 'src/cli/main.ts');
const RECORDING = join(ROOT, 'test/gateway/fixtures/recording-server.ts');
const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

function sandbox(limits: readonly Record<string, unknown>[], extra: Record<string, unknown> = {}) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-limits-')));
  const record = join(dir, 'received.jsonl');
  writeFileSync(record, '');
  const policy = join(dir, 'policy.yaml');
  const write = (l: readonly Record<string, unknown>[]) =>
    writeFileSync(
      policy,
      stringify({
        version: 1,
        gateway: {
          upstreams: {
            rec: { command: process.execPath, args: ['--import', 'tsx', RECORDING], env: { RECORD: record } },
          },
          pin: 'off',
        },
        rules: [
          {
            name: 'big-refunds',
            tools: 'rec:refund',
            when: { amount: { gt: 100 } },
            result: 'deny',
            reason: 'refunds over 100 go through finance',
          },
          { name: 'rest', result: 'allow' },
        ],
        limits: l,
        ...extra,
      }),
    );
  write(limits);
  const ran = (name: string) =>
    readFileSync(record, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { name?: string })
      .filter((r) => r.name === name).length;
  return { dir, policy, write, ran };
}

const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

async function stdioGateway(policy: string, extra: string[] = []) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', MAIN, 'gateway', '--policy', policy, ...extra],
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'caller', version: '1.0.0' });
  await client.connect(transport);
  cleanups.push(() => client.close());
  // The upstream may take a while to start on a loaded machine (the gateway reconnects it).
  for (let tries = 0; !(await client.listTools()).tools.some((t) => t.name === 'rec:echo'); tries++) {
    if (tries > 100) throw new Error(`the upstream did not come up:\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { client, stderr: () => stderr };
}

/** A `toolgate gateway --http 0 --no-auth --stateless` replica; resolves with its URL once it listens. */
async function replica(policy: string, store: string[]): Promise<URL> {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', MAIN, 'gateway', '--policy', policy, '--http', '0', '--no-auth', '--stateless', ...store],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  cleanups.push(() => {
    child.kill();
  });
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`the replica did not listen:\n${stderr}`)), 60_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const m = /listening on (\S+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(new URL(m[1]!));
      }
    });
    child.once('exit', (code) => reject(new Error(`the replica exited (${code}):\n${stderr}`)));
  });
}

async function httpClient(url: URL) {
  const client = new Client({ name: 'caller', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  cleanups.push(() => client.close());
  for (let tries = 0; !(await client.listTools()).tools.some((t) => t.name === 'rec:echo'); tries++) {
    if (tries > 300) throw new Error('the upstream of a replica did not come up');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return client;
}

describe('limits: through the real toolgate gateway', { timeout: 180_000 }, () => {
  it('refuses the call past the max, naming the limit and the retry time; refused calls count', async () => {
    const echoes = uniqueName('two_echoes');
    const refunds = uniqueName('two_refunds');
    const box = sandbox([
      { name: echoes, tools: ['rec:echo'], max: 2, window: '1h' },
      { name: refunds, tools: ['rec:refund'], max: 2, window: '1h' },
    ]);
    const { client } = await stdioGateway(box.policy);
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await client.callTool({ name: 'rec:echo', arguments: { text: `${i}` } }));
    expect(results.map((r) => r.isError === true)).toEqual([false, false, true, true]);
    expect(text(results[2])).toContain(`refused by the limit ${JSON.stringify(echoes)}`);
    expect(text(results[2])).toMatch(/at most 2 per 1h; 2 used.*retried after \d{4}-\d\d-\d\dT/s);
    expect(box.ran('echo')).toBe(2);
    // A refund the policy refuses still spends a slot: one more runs, the next is refused by the limit.
    const big = await client.callTool({ name: 'rec:refund', arguments: { order: 'A-1', amount: 5000 } });
    expect(text(big)).toMatch(/finance/);
    const small = await client.callTool({ name: 'rec:refund', arguments: { order: 'A-2', amount: 10 } });
    expect(small.isError).not.toBe(true);
    const over = await client.callTool({ name: 'rec:refund', arguments: { order: 'A-3', amount: 10 } });
    expect(text(over)).toContain(`refused by the limit ${JSON.stringify(refunds)}`);
    expect(box.ran('refund')).toBe(1);
  });

  it('a reload swaps the limiter with the policy (the counts stay)', async () => {
    const echoes = uniqueName('echoes');
    const box = sandbox([{ name: echoes, tools: ['rec:echo'], max: 1, window: '1h' }]);
    const { client, stderr } = await stdioGateway(box.policy);
    const call = () => client.callTool({ name: 'rec:echo', arguments: { text: 'x' } });
    expect((await call()).isError).not.toBe(true);
    expect((await call()).isError).toBe(true);
    box.write([{ name: echoes, tools: ['rec:echo'], max: 3, window: '1h' }]);
    for (let tries = 0; !/limits changed/.test(stderr()); tries++) {
      if (tries > 100) throw new Error(`no reload:\n${stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // One used under max 1; under max 3 two more run, the fourth is refused.
    const after = [await call(), await call(), await call()];
    expect(after.map((r) => r.isError === true)).toEqual([false, false, true]);
    expect(box.ran('echo')).toBe(3);
    box.write([]);
    for (let tries = 0; (stderr().match(/limits changed/g) ?? []).length < 2; tries++) {
      if (tries > 100) throw new Error(`no second reload:\n${stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await call()).isError).not.toBe(true);
    expect(box.ran('echo')).toBe(4);
  });

  for (const [store, flags] of [
    ['Redis', ['--redis', REDIS_URL]],
    ['PostgreSQL', ['--counters-postgres', PG_URL]],
  ] as const) {
    it(`across two --stateless replicas on ${store} counters the total is exact`, async () => {
      const name = uniqueName('shared');
      const box = sandbox([{ name, tools: ['rec:echo'], max: 5, window: '1h' }]);
      const [a, b] = await Promise.all([replica(box.policy, [...flags]), replica(box.policy, [...flags])]);
      const clients = [await httpClient(a), await httpClient(b)];
      // Twelve calls, alternating replicas, six at a time: exactly five run.
      const outcomes: boolean[] = [];
      for (let round = 0; round < 2; round++)
        outcomes.push(
          ...(await Promise.all(
            Array.from({ length: 6 }, (_, i) =>
              clients[i % 2]!.callTool({ name: 'rec:echo', arguments: { text: `${round}.${i}` } }).then(
                (r) => r.isError !== true,
              ),
            ),
          )),
        );
      expect(outcomes.filter(Boolean)).toHaveLength(5);
      expect(box.ran('echo')).toBe(5);
    });
  }
});
