/**
 * atk-pins: the lock file's `tools` and `drift` are plain objects read by `lock.tools[name]`. An unprefixed upstream's
 * tool named `constructor` (or `__proto__`: canonical forms are lower case, so these two of Object.prototype's names)
 * finds Object.prototype's member there, not `undefined`: PinStore.check never takes it for a new tool (so never pins
 * it, and never counts it against PINS_PER_UPSTREAM_MAX), and the diff of the "pinned" member throws, which the
 * tracker records as drift ("the lock file cannot be read"). Under `pin: ask` a drifted tool is a person's call: the
 * person is asked, approves, and the tool runs unpinned — also past the bound, where the merge's rule
 * `pins-per-upstream` promises a refusal in both modes ("an approved unpinned tool would pass its next rug pull");
 * `isUnpinned` reads `lock.tools.constructor` as a pin too.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ElicitRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { hashOf } from '../../src/crypto.js';
import { PinStore, PINS_PER_UPSTREAM_MAX } from '../../src/gateway/pins.js';
import { cleanupsAfterEach, gatewayOn, inMemoryClient, tempDir, text, writePolicy } from '../harness.js';

const cleanups = cleanupsAfterEach();

describe('atk-pins: a tool named after a member of Object.prototype', () => {
  it.each(['constructor', '__proto__'])('%s is pinned on first sight, then matched or drifted as any tool', (name) => {
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-atk-pins-')), 'policy.lock.json');
    const store = new PinStore(file);
    const definition = { name, description: 'builds a thing', inputSchema: {} };
    // On main: throws "canonical JSON cannot carry a undefined" (Object.prototype's member taken for its pin).
    expect(store.check(name, definition, 'up').state).toBe('new');
    expect(store.check(name, definition, 'up').state).toBe('pinned');
    expect(store.check(name, { ...definition, description: 'and mails it' }, 'up').state).toBe('drift');
    expect(Object.keys(store.lock.tools)).toEqual([name]);
    // Written and read back as a pin (another process's store, or the next start).
    expect(new PinStore(file).lock.drift?.[name]?.definition.description).toBe('and mails it');
    expect(new PinStore(file).check(name, definition, 'up').state).toBe('pinned');
  });
});

describe('atk-pins: through a gateway under `pin: ask`', { timeout: 120_000 }, () => {
  /** A gateway over one unprefixed upstream listing `constructor`, its lock file holding `held` pins of it. */
  async function gatewayListingConstructor(held: number) {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    cleanups.push(() => vi.restoreAllMocks());
    const dir = tempDir('atk-pins');
    const lockFile = join(dir, 'policy.lock.json');
    const tools: Record<string, unknown> = {};
    for (let i = 0; i < held; i++) {
      const definition = { name: `old_${i}`, inputSchema: { type: 'object' } };
      tools[`old_${i}`] = { sha256: hashOf(definition), definition, at: '2026-12-01T00:00:00.000Z', upstream: 'up' };
    }
    writeFileSync(lockFile, JSON.stringify({ version: 2, tools }));
    const ran: string[] = [];
    const make = (): Server => {
      const server = new Server({ name: 'up', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: [{ name: 'constructor', description: 'builds a thing', inputSchema: { type: 'object' } }],
      }));
      server.setRequestHandler(CallToolRequestSchema, (request) => {
        ran.push(request.params.name);
        return { content: [{ type: 'text', text: 'ran' }] };
      });
      return server;
    };
    const policy = writePolicy(dir, { rules: [{ name: 'all', result: 'allow' }] });
    const { gateway } = await gatewayOn(cleanups, policy, () => ({
      pins: { file: lockFile, onDrift: 'ask' },
      upstreams: {
        up: {
          prefix: false,
          transport: () => {
            const [a, b] = InMemoryTransport.createLinkedPair();
            void make().connect(b);
            return a;
          },
        },
      },
    }));
    const client = await inMemoryClient(cleanups, gateway, { capabilities: { elicitation: { form: {} } } });
    const asked: string[] = [];
    // The person approves whatever they are asked.
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(String((request.params as { message?: unknown }).message));
      return { action: 'accept', content: { approve: true } };
    });
    return { client, ran, asked };
  }

  it('past the bound, `constructor` is refused by pins-per-upstream, not asked and run unpinned', async () => {
    const { client, ran, asked } = await gatewayListingConstructor(PINS_PER_UPSTREAM_MAX);
    const result = await client.callTool({ name: 'constructor', arguments: {} });
    // On main: the person is asked about a "drifted definition" ("the lock file cannot be read"), approves, it runs.
    expect(asked).toEqual([]);
    expect(ran).toEqual([]);
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/PINS_PER_UPSTREAM_MAX/);
  });

  it('under the bound, `constructor` is pinned on first sight and runs without asking', async () => {
    const { client, ran, asked } = await gatewayListingConstructor(0);
    // On main: never pinned, so every call is a person's, each shown a definition "drifted" from nothing.
    expect(text(await client.callTool({ name: 'constructor', arguments: {} }))).toBe('ran');
    expect(asked).toEqual([]);
    expect(ran).toEqual(['constructor']);
  });
});
