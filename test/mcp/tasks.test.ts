/**
 * Tasks where no upstream offers them: the gateway offers the tasks extension only where an upstream does
 * (and it has the owner's secret to bind a handle; tasks-owned.test.ts), so here every tasks method from a
 * client of either era is refused (-32601) and never reaches an upstream, and `server/discover` does not
 * advertise the extension even to a client that declares it.
 */
import { readFileSync } from 'node:fs';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import {
  cleanupsAfterEach,
  emptyFile,
  gatewayOverHttp,
  modernRequest,
  RECORDING,
  stdioUpstream,
  tempDir,
  writePolicy,
} from '../harness.js';
import { MODERN } from './fixtures/processes.js';

const cleanups = cleanupsAfterEach();

const TASK_METHODS = ['tasks/get', 'tasks/result', 'tasks/update', 'tasks/cancel', 'tasks/list'] as const;

describe('tasks: none created, none reachable', { timeout: 120_000 }, () => {
  it('every tasks method from a 2026-07-28 or a 2025-11-25 client is refused and never reaches an upstream', async () => {
    const dir = tempDir('tasks');
    const record = emptyFile(dir, 'received.jsonl');
    const policy = writePolicy(dir, {
      gateway: {
        upstreams: {
          modern: { ...stdioUpstream(MODERN), connectTimeoutMs: 30_000 },
          rec: stdioUpstream(RECORDING, { RECORD: record }),
        },
        pin: 'off',
      },
      rules: [{ name: 'rest', result: 'allow' }],
    });
    const { http } = await gatewayOverHttp(cleanups, policy);
    const capabilities = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    const post = async (method: string, params: Record<string, unknown>) =>
      (
        await modernRequest<{ result?: Record<string, unknown>; error?: { code: number; message: string } }>(
          http.url,
          method,
          params,
          { capabilities },
        )
      ).body;
    const discovered = await post('server/discover', {});
    expect(JSON.stringify(discovered.result)).not.toContain('io.modelcontextprotocol/tasks');
    for (const method of TASK_METHODS) {
      const answer = await post(method, { taskId: 'rec-task-1' });
      expect(answer.error?.code, `${method}: ${JSON.stringify(answer)}`).toBe(-32601);
    }

    const legacy = new ClientV1({ name: 'legacy-client', version: '1.0.0' });
    await legacy.connect(new HttpV1(http.url));
    cleanups.push(() => legacy.close());
    for (const method of TASK_METHODS) {
      const error = await legacy.request({ method, params: { taskId: 'rec-task-1' } } as never, ResultSchema).then(
        () => null,
        (e: { code?: number }) => e,
      );
      expect(error?.code, method).toBe(-32601);
    }
    // The recording upstream saw none of them.
    expect(readFileSync(record, 'utf8')).not.toMatch(/tasks\//);
  });
});
