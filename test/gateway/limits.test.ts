// Issue 22 (and 21): the policy file's `limits:` through the real `toolgate gateway` process. On b5c000b the
// gateway built no limiter: under `max: 2` per hour the upstream ran 4 of 4 echo calls. Now the call past the
// max is refused with the limit's name and the retry time, refused calls count, a reload swaps the limiter,
// and across two `--stateless` replicas on shared counters (Redis, PostgreSQL) the total is exact.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { PG_URL, REDIS_URL, uniqueName } from '../stores/servers.js';
import {
  cleanupsAfterEach,
  emptyFile,
  jsonLines,
  RECORDING,
  stdioUpstream,
  tempDir,
  text,
  until,
  untilListed,
  writePolicy,
} from '../harness.js';
import { spawnGateway, stdioGateway } from './fixtures/spawn.js';

const cleanups = cleanupsAfterEach();

function sandbox(limits: readonly Record<string, unknown>[], extra: Record<string, unknown> = {}) {
  const dir = tempDir('limits');
  const record = emptyFile(dir, 'received.jsonl');
  const write = (l: readonly Record<string, unknown>[]) =>
    writePolicy(dir, {
      gateway: { upstreams: { rec: stdioUpstream(RECORDING, { RECORD: record }) }, pin: 'off' },
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
    });
  const policy = write(limits);
  const ran = (name: string) => jsonLines<{ name?: string }>(record).filter((r) => r.name === name).length;
  return { dir, policy, write, ran };
}

/** A `toolgate gateway --http 0 --no-auth --stateless` replica; resolves with its URL once it listens. */
async function replica(policy: string, store: string[]): Promise<URL> {
  const gateway = await spawnGateway(policy, ['--no-auth', '--stateless', ...store]);
  cleanups.push(() => gateway.stop());
  return gateway.url;
}

async function httpClient(url: URL) {
  const client = new Client({ name: 'caller', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  cleanups.push(() => client.close());
  await untilListed(client, 'rec:echo');
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
    const { client } = await stdioGateway(cleanups, ['--policy', box.policy], 'rec:echo');
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
    const { client, stderr } = await stdioGateway(cleanups, ['--policy', box.policy], 'rec:echo');
    const call = () => client.callTool({ name: 'rec:echo', arguments: { text: 'x' } });
    expect((await call()).isError).not.toBe(true);
    expect((await call()).isError).toBe(true);
    box.write([{ name: echoes, tools: ['rec:echo'], max: 3, window: '1h' }]);
    await until('no reload', () => /limits changed/.test(stderr()), stderr);
    // One used under max 1; under max 3 two more run, the fourth is refused.
    const after = [await call(), await call(), await call()];
    expect(after.map((r) => r.isError === true)).toEqual([false, false, true]);
    expect(box.ran('echo')).toBe(3);
    box.write([]);
    await until('no second reload', () => (stderr().match(/limits changed/g) ?? []).length >= 2, stderr);
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
