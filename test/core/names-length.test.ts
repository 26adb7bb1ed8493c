/**
 * A declared tool name is at most NAME_LENGTH_MAX (1,024) characters, its canonical form too (src/names.ts).
 *
 * Names key the registry, the allowlists, the policy's rules, the confusables' skeletons and an upstream's tables, and
 * V8 hashes a string past 16,383 characters by its length alone: an upstream listing 2,000 tools whose names were
 * 16,400 characters long and differed at their end took 13.7 s to register, each name compared with every other
 * (`npx tsx tmp/misc.mts names 2000`). Such names are refused (an upstream's skipped, with the reason), counted here.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { connectMcpServer } from '../../src/adapters/mcp/index.js';
import { ConfigurationError, defineTool, ToolRegistry } from '../../src/index.js';
import { declaredName, NAME_LENGTH_MAX } from '../../src/names.js';

const tool = (name: string) =>
  defineTool({ name, description: 'd', parameters: { type: 'object' }, execute: async () => 'ok' });

describe('a declared tool name', () => {
  it('of at most 1,024 characters is declared; a longer one is a ConfigurationError naming its length', () => {
    expect(NAME_LENGTH_MAX).toBe(1_024);
    expect(declaredName('a'.repeat(1_024), 'tool')).toBe('a'.repeat(1_024));
    expect(declaredName('É'.repeat(1_024), 'tool')).toBe('é'.repeat(1_024));
    for (const name of ['a'.repeat(1_025), 'A'.repeat(20_000), 'é'.repeat(16_400)]) {
      expect(() => declaredName(name, 'tool')).toThrow(ConfigurationError);
      expect(() => tool(name)).toThrow(/is [\d,]+ characters long; at most 1,024 are allowed/);
    }
  });

  it('whose canonical form is longer than 1,024 characters is refused too', () => {
    // U+FDFA is one character and 18 once NFKC-normalised: 100 of them are 1,800.
    expect(() => declaredName('\uFDFA'.repeat(100), 'tool')).toThrow(/1,800 characters long once normalised/);
    expect(() => declaredName('\uFDFA'.repeat(56), 'tool')).not.toThrow();
  });

  it("an upstream's tools with names past it are skipped, each with the reason; the others are served", async () => {
    const names = Array.from({ length: 300 }, (_, i) => `${'x'.repeat(16_400)}${String(i).padStart(4, '0')}`);
    const server = new Server({ name: 'long', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [...names, 'search'].map((name) => ({ name, inputSchema: { type: 'object' as const } })),
    }));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const registry = new ToolRegistry();
    const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    let warnings = 0;
    const connection = await connectMcpServer(registry, { transport: clientSide, prefix: 'long' }).finally(() => {
      warnings = warned.mock.calls.length;
      warned.mockRestore();
    });
    try {
      expect(warnings).toBe(300);
      expect(connection.tools).toEqual(['long:search']);
      expect(registry.list().map((t) => t.name)).toEqual(['long:search']);
      expect(connection.skipped).toHaveLength(300);
      for (const skipped of connection.skipped)
        expect(skipped.reason).toMatch(/MCP tool: tool name .* is 16,409 characters long; at most 1,024 are allowed/);
    } finally {
      await connection.close();
    }
  });
});
