/**
 * Attack on the tasks extension's requests (issue 25's explicit call scope): `tasks/get`, `tasks/update`
 * and `tasks/cancel` of a 2026-07-28 client go upstream on behalf of that client's request, like every other
 * forwarded request. Sent with no scope ("the gateway's own"), the upstream's log line while it serves bob's
 * task request was attributed to no request in flight and went to every client listening: alice heard bob's
 * task. A real 2026-07-28 upstream that creates tasks (test/mcp/fixtures/tasks-server.ts, LOG=1: a log line
 * during each tasks request), alice a 2025-11-25 session that asked for log lines, bob a 2026-07-28 client.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { MemoryLedger, MemoryNonceStore } from '../../src/stores/memory.js';
import { loadPolicyFile } from '../../src/policy-file/index.js';
import { httpFixture } from '../mcp/fixtures/processes.js';
import {
  cleanupsAfterEach,
  emptyFile,
  gatewayOverHttp,
  jsonLines,
  modernExchange,
  ROOT,
  tempDir,
  until,
  untilListed,
  writePolicy,
} from '../harness.js';

const cleanups = cleanupsAfterEach();
const TASKS_SERVER = join(ROOT, 'test/mcp/fixtures/tasks-server.ts');
const TASKS = 'io.modelcontextprotocol/tasks';
const SECRET = 'the owner-set approval key of this test gateway';

async function start() {
  const dir = tempDir('task-scope');
  const record = emptyFile(dir, 'received.jsonl');
  // Over HTTP: a 2026-07-28 upstream's line comes on its request's stream (over stdio nothing ties it to the
  // request in flight, and Relay.log drops it: test/attacks/log-late-line.test.ts).
  const upstream = await httpFixture(TASKS_SERVER, { RECORD: record, LOG: '1' });
  cleanups.push(() => upstream.stop());
  const policyWith = (rules: object[]) =>
    writePolicy(
      dir,
      {
        gateway: {
          upstreams: {
            jobs: { url: upstream.url.href, connectTimeoutMs: 30_000 },
          },
          pin: 'off',
        },
        rules,
      },
      `policy-${rules.length}.yaml`,
    );
  const on = await gatewayOverHttp(cleanups, policyWith([{ name: 'all', result: 'allow' }]), {
    gateway: () => ({
      requestState: { secret: SECRET, nonces: new MemoryNonceStore(), ledger: new MemoryLedger() },
    }),
    http: () => ({
      audience: false,
      authenticate: async (token) => ({ token, clientId: token, scopes: [] }),
      context: (auth) => ({ caller: { id: auth.clientId } }),
    }),
  });
  /** Denies `jobs:run` from now on (a narrowing reload: in force at once). */
  const denyRun = async () => {
    const set = await loadPolicyFile(
      policyWith([
        { name: 'no-run', tools: ['jobs:run'], result: 'deny', reason: 'stopped' },
        { name: 'all', result: 'allow' },
      ]),
    );
    expect(await on.gateway.reload(set)).toMatchObject({ ok: true });
  };
  const received = () => jsonLines<{ method: string; params: Record<string, unknown> }>(record);
  return { ...on, denyRun, received };
}

/** A 2025-11-25 session of `who` over HTTP that asked for every log line. */
async function listener(url: URL, who: string) {
  const client = new ClientV1({ name: who, version: '1' }, { capabilities: {} });
  const logs: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(String(n.params.data)));
  await client.connect(new HttpV1(url, { requestInit: { headers: { authorization: `Bearer ${who}` } } }));
  cleanups.push(() => client.close());
  await untilListed(client, 'jobs:run');
  // A 2026-07-28 upstream has no logging/setLevel: the gateway does not ask it (session.ts setLevel), and the
  // client's request succeeds; the client is marked as listening.
  await client.setLoggingLevel('debug');
  return { client, logs };
}

/**
 * One 2026-07-28 request of bob's that declares the tasks extension and asks for log lines: every
 * JSON-RPC message of its answer (the log lines the gateway relayed to it, then its answer).
 */
const bobs = (url: URL, method: string, params: Record<string, unknown>) =>
  modernExchange(url, method, params, {
    token: 'bob',
    capabilities: { extensions: { [TASKS]: {} } },
    logLevel: 'debug',
  });

describe(
  "an upstream's log lines during a task request reach only the client whose request it is",
  { timeout: 120_000 },
  () => {
    it("bob's tasks/get, tasks/update and tasks/cancel: alice, listening, never hears their log lines; bob does", async () => {
      const { url, received } = await start();
      const alice = await listener(url, 'alice');
      await sleep(200);
      alice.logs.length = 0;

      const created = await bobs(url, 'tools/call', { name: 'jobs:run', arguments: { job: 'build' } });
      const handle = (created.answer?.result as { taskId?: string } | undefined)?.taskId;
      expect(handle, JSON.stringify(created)).toMatch(/^tg-task\./);

      const got = await bobs(url, 'tasks/get', { taskId: handle });
      expect(got.answer?.result, JSON.stringify(got)).toMatchObject({ status: 'completed', taskId: handle });
      const updated = await bobs(url, 'tasks/update', { taskId: handle, inputResponses: {} });
      expect(updated.answer?.result, JSON.stringify(updated)).toBeDefined();
      const cancelled = await bobs(url, 'tasks/cancel', { taskId: handle });
      expect(cancelled.answer?.result, JSON.stringify(cancelled)).toBeDefined();
      // Each reached the upstream, which logged during it.
      expect(received().map((r) => r.method)).toEqual(['tools/call', 'tasks/get', 'tasks/update', 'tasks/cancel']);
      await sleep(300);
      expect(alice.logs).toEqual([]);
      // The lines went to bob's own requests, before their answers.
      expect([created.logs, got.logs, updated.logs, cancelled.logs]).toEqual([
        ['tools/call build'],
        ['tasks/get up-1'],
        ['tasks/update up-1'],
        ['tasks/cancel up-1'],
      ]);
      // What alice's own request logs does reach her (the relay works at all).
      await alice.client.callTool({ name: 'jobs:run', arguments: { job: 'alice-own' } });
      await until('alice hears her own line', () => alice.logs.includes('tools/call alice-own'));
    });

    it("the cancel a refused read sends upstream is bob's request too: alice never hears its log line", async () => {
      const { url, received, denyRun } = await start();
      const alice = await listener(url, 'alice');
      await sleep(200);
      alice.logs.length = 0;
      const created = await bobs(url, 'tools/call', { name: 'jobs:run', arguments: { job: 'build' } });
      const handle = (created.answer?.result as { taskId?: string } | undefined)?.taskId;
      expect(handle, JSON.stringify(created)).toMatch(/^tg-task\./);
      await denyRun();
      const got = await bobs(url, 'tasks/get', { taskId: handle });
      expect(JSON.stringify(got.answer?.error)).toContain('the task was cancelled upstream');
      await until('the upstream was told to cancel', () => received().some((r) => r.method === 'tasks/cancel'));
      await sleep(300);
      expect(alice.logs).toEqual([]);
      expect(received().map((r) => r.method)).toEqual(['tools/call', 'tasks/cancel']);
      // What alice's own request logs does reach her (the relay works at all; jobs:run is denied now).
      await alice.client.callTool({ name: 'jobs:pay', arguments: { to: 'alice-own', amount: 1 } });
      await until('alice hears her own line', () => alice.logs.includes('tools/call pay alice-own 1'));
    });
  },
);
