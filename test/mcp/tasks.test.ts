/**
 * Tasks where no upstream offers them: the gateway offers the tasks extension only where an upstream does
 * (and it has the owner's secret to bind a handle; tasks-owned.test.ts), so here every tasks method from a
 * client of either era is refused (-32601) and never reaches an upstream, and `server/discover` does not
 * advertise the extension even to a client that declares it.
 */
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createGateway, gatewayConfigOf, type GatewayAuditRecord } from '../../src/gateway/index.js';
import { serveGatewayHttp } from '../../src/gateway/http.js';
import { loadPolicyFile } from '../../src/policy-file/index.js';
import { MODERN, tsx } from './fixtures/processes.js';

const RECORDING = join(process.cwd(), 'test/gateway/fixtures/recording-server.ts');
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

const TASK_METHODS = ['tasks/get', 'tasks/result', 'tasks/update', 'tasks/cancel', 'tasks/list'] as const;

describe('tasks: none created, none reachable', { timeout: 120_000 }, () => {
  it('every tasks method from a 2026-07-28 or a 2025-11-25 client is refused and never reaches an upstream', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-tasks-')));
    const record = join(dir, 'received.jsonl');
    writeFileSync(record, '');
    const policy = join(dir, 'policy.yaml');
    const { stderr: _stderr, ...modern } = tsx(MODERN);
    writeFileSync(
      policy,
      stringify({
        version: 1,
        gateway: {
          upstreams: {
            modern: { ...modern, connectTimeoutMs: 30_000 },
            rec: { command: process.execPath, args: ['--import', 'tsx', RECORDING], env: { RECORD: record } },
          },
          pin: 'off',
        },
        rules: [{ name: 'rest', result: 'allow' }],
      }),
    );
    const set = await loadPolicyFile(policy);
    const records: GatewayAuditRecord[] = [];
    const gateway = await createGateway({
      policy: set,
      upstreams: gatewayConfigOf(set).upstreams,
      pins: null,
      audit: (r) => records.push(r),
    });
    cleanups.push(() => gateway.close());
    const http = await serveGatewayHttp(gateway, { port: 0, authenticate: null });
    cleanups.push(() => http.close());

    const envelope = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
    };
    const post = async (method: string, params: Record<string, unknown>) => {
      const response = await fetch(http.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': method,
          ...(typeof params['taskId'] === 'string' ? { 'mcp-name': params['taskId'] } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: envelope } }),
      });
      const text = await response.text();
      return (text.startsWith('{') ? JSON.parse(text) : JSON.parse(/data: (.*)/.exec(text)![1]!)) as {
        result?: Record<string, unknown>;
        error?: { code: number; message: string };
      };
    };
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
