/**
 * Attack (argument validation, src/schema-regexp.ts): a JSON Schema `pattern` (or a `patternProperties` name) was
 * compiled by Ajv into a backtracking RegExp. A schema's `^(a+)+$` (a registered tool's, or an MCP upstream's
 * `inputSchema`: the upstream writes it) and an argument a model wrote, `"aaaa…a!"`, held the event loop: on main,
 * 26 characters 0.4 s of CPU, each two more ×4 (30: ~7 s, 40: hours), every call of every tenant waiting. Patterns
 * are matched by RE2 in linear time; one RE2 cannot match as ECMAScript does (a lookbehind) is refused, by name.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcpServer, type McpConnection } from '../../src/adapters/mcp/index.js';
import { ToolRegistry } from '../../src/index.js';
import { registryWith } from './fixtures/schema-tool.js';
import { asyncCpuMs } from '../cpu.js';

const EVIL = '^(a+)+$';

describe('a catastrophic pattern and a crafted argument', () => {
  it.each([
    ['pattern', { type: 'object', properties: { to: { type: 'string', pattern: EVIL } } }, (s: string) => ({ to: s })],
    [
      'patternProperties',
      { type: 'object', patternProperties: { [EVIL]: { type: 'number' } }, additionalProperties: false },
      (s: string) => ({ [s]: 1 }),
    ],
  ])('%s: refused at once, however long the argument (main: 28 characters ~1.6 s)', async (_label, schema, args) => {
    const { registry, ran } = registryWith(schema);
    // 28: seconds of CPU on main (it grew ×4 each two characters); 100,000: linear.
    for (const n of [28, 100_000]) {
      const ms = await asyncCpuMs(async () =>
        expect((await registry.invoke('pay', args('a'.repeat(n) + '!'))).status).toBe('refused'),
      );
      expect(ms).toBeLessThan(500);
    }
    expect(ran).toEqual([]);
    expect((await registry.invoke('pay', args('aaaa'))).status).toBe('ok');
  });
});

const open: McpConnection[] = [];
afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close();
});

async function upstream(registry: ToolRegistry, pattern: string) {
  const calls: unknown[] = [];
  const server = new Server({ name: 'evil', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      {
        name: 'pay',
        inputSchema: { type: 'object' as const, properties: { to: { type: 'string', pattern } } },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    calls.push(request.params.arguments);
    return { content: [{ type: 'text', text: 'paid' }] };
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const connection = await connectMcpServer(registry, { transport: clientSide, prefix: 'evil' });
  open.push(connection);
  return { calls, connection };
}

describe("an MCP upstream's inputSchema with a catastrophic pattern", () => {
  it('the crafted call is refused at once and never reaches the upstream', async () => {
    const registry = new ToolRegistry();
    const { calls } = await upstream(registry, EVIL);
    const ms = await asyncCpuMs(async () =>
      expect((await registry.invoke('evil:pay', { to: 'a'.repeat(28) + '!' })).status).toBe('refused'),
    );
    expect(ms).toBeLessThan(500);
    expect((await registry.invoke('evil:pay', { to: 'aaa' })).status).toBe('ok');
    expect(calls).toEqual([{ to: 'aaa' }]);
  });

  it('a pattern RE2 cannot match as ECMAScript does (a lookbehind) is not served, the pattern named', async () => {
    const registry = new ToolRegistry();
    const { connection } = await upstream(registry, '^[a-z]+(?<!admin)$');
    expect(connection.tools).not.toContain('evil:pay');
    expect(connection.skipped).toEqual([
      {
        tool: 'pay',
        reason: expect.stringMatching(/pattern "\^\[a-z\]\+\(\?<!admin\)\$" is not supported: lookaround/),
      },
    ]);
  });
});

describe('a registered tool whose pattern RE2 cannot match as ECMAScript does', () => {
  it('does not register, naming the tool and the pattern', () => {
    expect(() => registryWith({ type: 'object', properties: { x: { type: 'string', pattern: '(a)\\1' } } })).toThrow(
      /tool "pay": its JSON Schema does not compile: pattern "\(a\)\\\\1" is not supported: a backreference/,
    );
  });
});

/** An upstream whose tool declares an output schema with `pattern` and answers `structuredContent` {s: text}. */
async function outputUpstream(registry: ToolRegistry, pattern: string, text: string) {
  const server = new Server({ name: 'evil', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      {
        name: 'echo',
        inputSchema: { type: 'object' as const },
        outputSchema: { type: 'object' as const, properties: { s: { type: 'string', pattern } } },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, () => ({
    content: [{ type: 'text', text }],
    structuredContent: { s: text },
  }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  open.push(await connectMcpServer(registry, { transport: clientSide, prefix: 'evil' }));
}

describe("an MCP upstream's outputSchema with a catastrophic pattern (the upstream writes the content too)", () => {
  it("its crafted structuredContent is refused at once: the SDK's default Ajv backtracked (these 29 characters: ~13 s of CPU)", async () => {
    const registry = new ToolRegistry();
    await outputUpstream(registry, EVIL, 'a'.repeat(28) + '!');
    let result: Awaited<ReturnType<ToolRegistry['invoke']>> | undefined;
    const ms = await asyncCpuMs(async () => (result = await registry.invoke('evil:echo', {})));
    expect(ms).toBeLessThan(500);
    expect(result?.status).toBe('error');
    expect(JSON.stringify(result)).toMatch(/output schema/);
  });

  it('content the output schema accepts passes; content it refuses does not', async () => {
    const ok = new ToolRegistry();
    await outputUpstream(ok, '^a+$', 'aaa');
    expect((await ok.invoke('evil:echo', {})).status).toBe('ok');
    const bad = new ToolRegistry();
    await outputUpstream(bad, '^a+$', 'aab');
    expect((await bad.invoke('evil:echo', {})).status).toBe('error');
  });
});
