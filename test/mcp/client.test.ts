/**
 * The MCP client of src/mcp/ against real servers of both eras over real transports: a 2026-07-28 server
 * built with the SDK v2 (modern only) and a 2025-11-25 server built with the SDK v1, each over stdio and
 * over Streamable HTTP; and servers that answer in an era they did not announce.
 */
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import {
  connectMcpServer,
  ERA_VIOLATION_CODE,
  type EraViolation,
  type McpConnection,
  type McpServerOptions,
} from '../../src/mcp/index.js';
import { PermissionPolicy, ToolRegistry } from '../../src/index.js';
import { httpFixture, LEGACY, LIAR, MODERN, tsx } from './fixtures/processes.js';
import { cleanupsAfterEach, emptyFile, tempDir } from '../harness.js';

const cleanups = cleanupsAfterEach();

const everyone = { agent: { name: 'a', tools: ['up:echo', 'up:pay', 'up:era', 'up:fail'] } };

async function connect(registry: ToolRegistry, options: McpServerOptions): Promise<McpConnection> {
  const connection = await connectMcpServer(registry, { prefix: 'up', connectTimeoutMs: 20_000, ...options });
  cleanups.push(() => connection.close());
  return connection;
}

async function endpoint(file: string, transport: 'stdio' | 'http', env?: Record<string, string>) {
  if (transport === 'stdio') return { stdio: tsx(file, env) };
  const server = await httpFixture(file, env);
  cleanups.push(() => server.stop());
  return { url: server.url };
}

describe('src/mcp: one client for both eras', { timeout: 60_000 }, () => {
  for (const transport of ['stdio', 'http'] as const) {
    for (const [era, file, version] of [
      ['modern', MODERN, '2026-07-28'],
      ['legacy', LEGACY, '2025-11-25'],
    ] as const) {
      it(`speaks ${version} to a ${era} server over ${transport}: its tools pass the gate`, async () => {
        const dir = tempDir('mcp');
        const ledger = emptyFile(dir, 'ledger');
        const registry = new ToolRegistry();
        registry.setPermissionPolicy(
          new PermissionPolicy({
            rules: [
              { name: 'small', tools: ['up:pay'], match: (_t, p) => Number(p['amount']) <= 10, result: 'allow' },
              { name: 'reads', tools: ['up:echo', 'up:era', 'up:fail'], result: 'allow' },
            ],
            fallback: 'deny',
          }),
        );
        const connection = await connect(registry, await endpoint(file, transport, { LEDGER: ledger }));
        expect(connection.session.era).toBe(era);
        expect(connection.session.version).toBe(version);
        expect(connection.session.discover?.supportedVersions).toEqual(era === 'modern' ? ['2026-07-28'] : undefined);
        expect(connection.tools).toEqual(['up:echo', 'up:pay', 'up:era', 'up:confirm', 'up:fail', 'up:slow']);
        // The server itself says which era it served the call in.
        expect(await registry.invoke('up:era', {}, everyone)).toMatchObject({ status: 'ok', content: era });
        expect(await registry.invoke('up:echo', { text: 'hi' }, everyone)).toMatchObject({ content: 'echo: hi' });
        expect(await registry.invoke('up:pay', { to: 'bob', amount: 5 }, everyone)).toMatchObject({ status: 'ok' });
        // Same decisions in both eras: refused by the policy, refused by the schema; neither reached the server.
        expect(await registry.invoke('up:pay', { to: 'eve', amount: 500 }, everyone)).toMatchObject({
          status: 'refused',
        });
        expect(await registry.invoke('up:pay', { to: 'eve' }, everyone)).toMatchObject({ status: 'refused' });
        expect(readFileSync(ledger, 'utf8')).toBe('bob:5\n');
        const failed = await registry.invoke('up:fail', {}, everyone);
        expect(failed).toMatchObject({ status: 'error' });
      });
    }
  }

  it('refuses a Client of the SDK v1 with an error naming the fix, and takes a v1 transport', async () => {
    const registry = new ToolRegistry();
    const v1 = new ClientV1({ name: 'old', version: '1.0.0' });
    await expect(connectMcpServer(registry, { client: v1 as never })).rejects.toThrow(
      /@modelcontextprotocol\/sdk 1\.x.*cannot speak MCP 2026-07-28.*option "transport"/,
    );
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const connection = await connect(registry, { transport: new StdioClientTransport(tsx(MODERN)) });
    // A v1 transport on its own is not the SDK's stdio transport: the probe runs in place, and finds 2026-07-28.
    expect(connection.session.era).toBe('modern');
    expect(await registry.invoke('up:era', {}, everyone)).toMatchObject({ content: 'modern' });
  });

  it('keeps a v2 client the caller connected in its own era (the SDK default is the 2025 handshake)', async () => {
    const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
    const client = new Client({ name: 'mine', version: '1.0.0' });
    await client.connect(new StdioClientTransport(tsx(LEGACY)));
    const registry = new ToolRegistry();
    const connection = await connect(registry, { client });
    expect(connection.session).toMatchObject({ era: 'legacy', version: '2025-11-25' });
    expect(await registry.invoke('up:echo', { text: 'x' }, everyone)).toMatchObject({ content: 'echo: x' });
  });
});

describe('src/mcp: a server that answers in an era it did not announce', { timeout: 60_000 }, () => {
  for (const [lie, announced, detail] of [
    ['modern', '2026-07-28', /answered tools\/call without resultType \(a 2025-11-25 answer\)/],
    ['legacy', '2025-11-25', /answered tools\/call with resultType "input_required", which only exists in 2026-07-28/],
  ] as const) {
    it(`${announced} announced, the other era answered: a protocol error naming it, the answer not used`, async () => {
      const dir = tempDir('mcp');
      const calls = join(dir, 'calls');
      const violations: EraViolation[] = [];
      const registry = new ToolRegistry();
      const connection = await connect(registry, {
        stdio: tsx(LIAR, { LIE: lie, CALLS: calls }),
        onEraViolation: (v) => violations.push(v),
      });
      expect(connection.session.version).toBe(announced);
      const result = await registry.invoke('up:echo', { text: 'x' }, { agent: { name: 'a', tools: ['up:echo'] } });
      expect(result.status).toBe('error');
      expect(String(result.content)).toMatch(detail);
      expect(String(result.content)).toMatch(new RegExp(`the server announced ${announced}`));
      // It did reach the server (the call was allowed); what came back was not taken for a result.
      expect(existsSync(calls)).toBe(true);
      expect(violations).toEqual([
        expect.objectContaining({
          era: lie,
          version: announced,
          method: 'tools/call',
          detail: expect.stringMatching(detail),
        }),
      ]);
      expect(ERA_VIOLATION_CODE).toBe(-32603);
    });
  }
});
