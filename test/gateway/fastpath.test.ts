// Issue 25.2: the gateway's fast path over stdio (src/gateway/fastpath.ts, upstream-raw.ts) through the real
// `toolgate gateway` process with real upstreams (the recording server, server-filesystem, the docs server).
// The same seeded mix of calls — allowed, denied, asked (and answered yes or no by elicitation), unknown
// tools, bad arguments, a limit's max, an output schema, progress, an upstream's error result, resource
// reads allowed, denied and unroutable — is run once with the fast path and once with it switched off
// (TOOLGATE_GATEWAY_FAST_PATH=off: every request through the SDKs); the answers, what reached the upstream
// and the audit trail must be the same, and the fast run must really have gone raw (the upstream saw the
// gateway's own `toolgate-raw:` ids).
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { prng } from '../../bench/scenario.js';
import { jsonLines, until } from '../harness.js';

const ROOT = process.cwd();
const MAIN = join(ROOT, 'src/cli/main.ts');
// The recording server behind flaky-server.ts, which writes its pid (so a test can kill it).
const FLAKY = join(ROOT, 'test/gateway/fixtures/flaky-server.ts');
const DOCS = join(ROOT, 'test/gateway/fixtures/docs-server.ts');
const FS_SERVER = join(ROOT, 'node_modules/.bin/mcp-server-filesystem');
const SECRET = 'TOP-SECRET-fast-9d1e';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

function sandbox() {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-fastpath-')));
  const files = join(dir, 'files');
  mkdirSync(files);
  writeFileSync(join(files, 'public.txt'), 'public text of the fast path');
  writeFileSync(join(files, 'secret.txt'), SECRET);
  const record = join(dir, 'received.jsonl');
  writeFileSync(record, '');
  const policy = join(dir, 'policy.yaml');
  const audit = join(dir, 'audit.jsonl');
  writeFileSync(
    policy,
    stringify({
      version: 1,
      gateway: {
        upstreams: {
          rec: {
            command: process.execPath,
            args: ['--import', 'tsx', FLAKY],
            env: { RECORD: record, RECORD_IDS: '1', SLOW_MS: '4000', PIDFILE: join(dir, 'rec.pid') },
          },
          fs: { command: FS_SERVER, args: [files] },
          docs: { command: process.execPath, args: ['--import', 'tsx', DOCS] },
        },
      },
      rules: [
        { name: 'big-refunds', tools: 'rec:refund', when: { amount: { gt: 100 } }, result: 'deny', reason: 'finance' },
        { name: 'ask-refunds', tools: 'rec:refund', when: { amount: { gt: 50 } }, result: 'ask' },
        {
          name: 'no-secret-file',
          tools: 'fs:read_text_file',
          when: { path: { path: [join(files, 'secret.txt')] } },
          result: 'deny',
        },
        { name: 'rest', result: 'allow' },
      ],
      resources: [
        { name: 'no-secrets', uri: ['docs://secret/**', 'docs://kb/secret/**'], result: 'deny' },
        { name: 'all', result: 'allow' },
      ],
      limits: [{ name: 'five-echoes', tools: ['rec:echo'], max: 5, window: '1h' }],
    }),
  );
  return { dir, files, record, policy, audit };
}

type Box = ReturnType<typeof sandbox>;

/** The gateway process of each box. */
const gatewayPids = new WeakMap<Box, number>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function gateway(box: Box, fast: boolean): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', MAIN, 'gateway', '--policy', box.policy, '--audit', box.audit],
    env: { ...(process.env as Record<string, string>), ...(fast ? {} : { TOOLGATE_GATEWAY_FAST_PATH: 'off' }) },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'caller', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  // The person behind the client approves the refunds whose order says so.
  client.setRequestHandler(ElicitRequestSchema, async (request) => ({
    action: 'accept',
    content: { approve: request.params.message.includes('A-yes') },
  }));
  await client.connect(transport);
  if (transport.pid !== null) gatewayPids.set(box, transport.pid);
  cleanups.push(() => client.close());
  // Progress is counted as it arrives on the wire: the SDK client hands a notification to its handler a
  // microtask after a response read with it, so its own onprogress misses progress sent just before a result.
  const inner = transport.onmessage;
  transport.onmessage = (message) => {
    if ((message as { method?: string }).method === 'notifications/progress') progressSeen.count++;
    inner?.(message);
  };
  const wanted = ['rec:echo', 'fs:read_text_file', 'docs:slow'];
  for (let tries = 0; ; tries++) {
    const names = new Set((await client.listTools()).tools.map((t) => t.name));
    if (wanted.every((n) => names.has(n))) break;
    if (tries > 150) throw new Error(`the upstreams did not come up:\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return client;
}

type Op = (client: Client, box: Box, i: number) => Promise<unknown>;

/** Progress notifications seen on the wire since the last call began. */
const progressSeen = { count: 0 };

const call =
  (name: string, args: (box: Box, i: number) => Record<string, unknown>): Op =>
  async (client, box, i) => {
    progressSeen.count = 0;
    try {
      const result = await client.callTool({ name, arguments: args(box, i) }, undefined, {
        onprogress: () => undefined,
      });
      return { result, progress: progressSeen.count };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };

const read =
  (uri: string): Op =>
  async (client) => {
    try {
      return { result: await client.readResource({ uri }) };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };

const OPS: readonly Op[] = [
  call('rec:echo', (_b, i) => ({ text: `e${i}` })),
  call('rec:refund', (_b, i) => ({ order: `S-${i}`, amount: 10 })),
  call('rec:refund', (_b, i) => ({ order: `B-${i}`, amount: 500 })),
  call('rec:refund', (_b, i) => ({ order: `A-yes-${i}`, amount: 70 })),
  call('rec:refund', (_b, i) => ({ order: `A-no-${i}`, amount: 70 })),
  call('rec:nope', () => ({})),
  call('rec:refund', () => ({ order: 1, amount: 'lots' })),
  call('fs:read_text_file', (b) => ({ path: join(b.files, 'public.txt') })),
  call('fs:read_text_file', (b) => ({ path: join(b.files, 'secret.txt') })),
  call('docs:slow', () => ({})),
  call('docs:fail', () => ({})),
  read('docs://public/readme'),
  read('docs://secret/keys'),
  read('docs://kb/public/intro'),
  read('file:///R/data/readme'),
  read('docs://kb/secret/keys'),
];

/** What may differ between two runs: times, random ids, durations, the sandbox's directory. */
function normal(value: unknown, box: Box): unknown {
  return JSON.parse(
    JSON.stringify(value)
      .replaceAll(box.dir, '<dir>')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>'),
  );
}

function received(box: Box): Record<string, unknown>[] {
  return readFileSync(box.record, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function auditOf(box: Box): Promise<Record<string, unknown>[]> {
  // Each line is written just after its answer, and whatever is held when the gateway stops: read once the
  // gateway (its client closed) has exited.
  const pid = gatewayPids.get(box);
  await until('the gateway exited', () => pid === undefined || !alive(pid));
  return jsonLines(box.audit)
    .filter((r) => r['type'] === 'tool' || r['type'] === 'resource')
    .map((r) => {
      const decision = r['decision'] as Record<string, unknown> | null | undefined;
      return {
        type: r['type'],
        status: r['status'],
        upstream: r['upstream'],
        target: r['target'],
        tool: decision?.['tool'],
        effect: decision?.['effect'],
        rule: decision?.['rule'],
        stage: decision?.['stage'],
        approval: (r['approval'] as { state?: string } | undefined)?.state,
      };
    });
}

describe('the fast path through the real toolgate gateway over stdio', { timeout: 240_000 }, () => {
  it('answers a random mix exactly as the SDK path does; denied calls never reach the upstream; limits hold', async () => {
    const seed = Date.now() % 100_000;
    const next = prng(seed); // the same mix in both runs, another mix in another test run
    // Every kind at least once, then a random mix (echo often enough to pass the limit's max of 5).
    const plan = [...OPS.keys(), ...Array.from({ length: 40 }, () => Math.floor(next() * OPS.length))];
    const runs = [];
    for (const fast of [true, false]) {
      const box = sandbox();
      const client = await gateway(box, fast);
      const answers = [];
      for (const [i, op] of plan.entries()) answers.push(await OPS[op]!(client, box, i));
      await client.close();
      runs.push({ box, answers: normal(answers, box), received: received(box), audit: await auditOf(box) });
    }
    const [fast, sdk] = runs as [(typeof runs)[0], (typeof runs)[0]];
    expect(fast.answers, `seed ${seed}`).toEqual(sdk.answers);
    const without = (r: Record<string, unknown>) => {
      const { id: _id, ...rest } = r;
      return rest;
    };
    expect(fast.received.map(without)).toEqual(sdk.received.map(without));
    expect(fast.audit).toEqual(sdk.audit);
    // The fast run went raw to the upstream (its own ids), the other through the SDK Client (numbers).
    expect(fast.received.length).toBeGreaterThan(0);
    for (const r of fast.received) expect(String(r['id'])).toMatch(/^toolgate-raw:\d+$/);
    for (const r of sdk.received) expect(typeof r['id']).toBe('number');
    for (const run of runs) {
      const text = JSON.stringify(run.answers);
      // Denied and declined calls never reached the upstream; the secrets never reached the client.
      expect(run.received.some((r) => /^(B|A-no)-/.test(String(r['order'])))).toBe(false);
      expect(run.received.some((r) => String(r['uri']).includes('secret'))).toBe(false);
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain('TOP SECRET');
      // The limit refuses past its max of 5.
      const echoes = plan.filter((op) => op === 0).length;
      expect(run.received.filter((r) => r['name'] === 'echo')).toHaveLength(Math.min(5, echoes));
      if (echoes > 5) expect(text).toContain('refused by the limit \\"five-echoes\\"');
      // Approved refunds ran, each audited; every call and read has its audit record.
      expect(run.received.some((r) => String(r['order']).startsWith('A-yes-'))).toBe(true);
      expect(run.audit).toHaveLength(plan.filter((op) => op !== 15).length);
    }
    // Progress went back to the client on the fast path too.
    expect((fast.answers as { progress?: number }[])[9]?.progress).toBe(3);
  });

  it("forwards a client's cancellation upstream under the gateway's own id", async () => {
    const box = sandbox();
    const client = await gateway(box, true);
    const stop = new AbortController();
    const call = client.callTool({ name: 'rec:slow', arguments: {} }, undefined, { signal: stop.signal });
    setTimeout(() => stop.abort('the user gave up'), 1000);
    await expect(call).rejects.toThrow();
    for (let tries = 0; !received(box).some((r) => r['name'] === 'slow:cancelled'); tries++) {
      if (tries > 50) throw new Error('the cancellation never reached the upstream');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(String(received(box).find((r) => r['name'] === 'slow:cancelled')?.['id'])).toMatch(/^toolgate-raw:/);
    // The session goes on.
    const echoed = await client.callTool({ name: 'rec:echo', arguments: { text: 'after' } });
    expect(echoed.content).toEqual([{ type: 'text', text: 'echo: after' }]);
  });

  it('an upstream that dies during a call: the same answer on both paths, and the gateway serves on', async () => {
    const answers = [];
    for (const fast of [true, false]) {
      const box = sandbox();
      const client = await gateway(box, fast);
      const call = client.callTool({ name: 'rec:slow', arguments: {} });
      await sleep(1000);
      process.kill(Number(readFileSync(join(box.dir, 'rec.pid'), 'utf8')), 'SIGKILL');
      answers.push(normal(await call, box));
      // The upstream is reconnected; its tools answer again.
      for (let tries = 0; ; tries++) {
        const echoed = await client.callTool({ name: 'rec:echo', arguments: { text: 'back' } });
        if (!echoed.isError) break;
        if (tries > 60) throw new Error(`the upstream did not come back: ${JSON.stringify(echoed)}`);
        await sleep(250);
      }
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(JSON.stringify(answers[0])).toContain('went down during the call');
  });
});
