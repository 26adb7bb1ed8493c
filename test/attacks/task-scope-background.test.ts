/**
 * Attack on the tasks extension's requests going upstream in the client request's scope (329357c): a task
 * runs upstream between requests, and what the upstream logs of it on its own (a worker's line, sent outside
 * any request: over stdio nothing ties it to one) is attributed by Relay.log to "the one client with a
 * request in flight". Since tasks/get is in flight for its client, alice polling HER task is that client
 * while bob's task logs in the background: bob's line reaches alice. Before 329357c alice's tasks/get was in
 * no scope, and the line went to no 2026-07-28 client (only to 2025-11-25 sessions listening). The same
 * attribution already let a tools/call in flight hear another task's background lines: polling makes it the
 * common case. Both alice and bob are 2026-07-28 clients that declare the tasks extension and ask for log
 * lines; the upstream is test/mcp/fixtures/tasks-server.ts with BACKGROUND=1 (a `bg-…` job logs
 * `background <job>` 400 ms after its creation, outside any request; a tasks/get of `slow` takes 1.5 s).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryLedger, MemoryNonceStore } from '../../src/stores/memory.js';
import {
  cleanupsAfterEach,
  emptyFile,
  gatewayOverHttp,
  modernExchange,
  ROOT,
  stdioUpstream,
  tempDir,
  writePolicy,
} from '../harness.js';

const cleanups = cleanupsAfterEach();
const TASKS_SERVER = join(ROOT, 'test/mcp/fixtures/tasks-server.ts');
const TASKS = 'io.modelcontextprotocol/tasks';
const SECRET = 'the owner-set approval key of this test gateway';

async function start() {
  const dir = tempDir('task-scope-bg');
  const record = emptyFile(dir, 'received.jsonl');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: {
        jobs: {
          ...stdioUpstream(TASKS_SERVER, { RECORD: record, LOG: '1', BACKGROUND: '1' }),
          connectTimeoutMs: 30_000,
        },
      },
      pin: 'off',
    },
    rules: [{ name: 'all', result: 'allow' }],
  });
  return gatewayOverHttp(cleanups, policy, {
    gateway: () => ({
      requestState: { secret: SECRET, nonces: new MemoryNonceStore(), ledger: new MemoryLedger() },
    }),
    http: () => ({
      audience: false,
      authenticate: async (token) => ({ token, clientId: token, scopes: [] }),
      context: (auth) => ({ caller: { id: auth.clientId } }),
    }),
  });
}

/** One 2026-07-28 request of `who`'s that declares the tasks extension and asks for every log line. */
const request = (url: URL, who: string, method: string, params: Record<string, unknown>) =>
  modernExchange(url, method, params, { token: who, capabilities: { extensions: { [TASKS]: {} } }, logLevel: 'debug' });

describe("an upstream's background log line of bob's task while alice polls her own task", { timeout: 120_000 }, () => {
  it("never reaches alice's tasks/get", async () => {
    const { url } = await start();
    const mine = await request(url, 'alice', 'tools/call', { name: 'jobs:run', arguments: { job: 'slow' } });
    const aliceHandle = (mine.answer?.result as { taskId?: string } | undefined)?.taskId;
    expect(aliceHandle, JSON.stringify(mine)).toMatch(/^tg-task\./);
    const bobs = await request(url, 'bob', 'tools/call', {
      name: 'jobs:run',
      arguments: { job: 'bg-bobs-payroll-export' },
    });
    expect((bobs.answer?.result as { taskId?: string } | undefined)?.taskId, JSON.stringify(bobs)).toMatch(
      /^tg-task\./,
    );
    // Alice polls her own task: in flight for 1.5 s, during which bob's task logs on its own (at 400 ms).
    const polled = await request(url, 'alice', 'tasks/get', { taskId: aliceHandle });
    expect(polled.answer?.result, JSON.stringify(polled)).toMatchObject({ status: 'completed' });
    expect(polled.logs.filter((line) => line.includes('bobs-payroll'))).toEqual([]);
  });
});
