/**
 * atk-gwlist: an upstream that lists fresh tool names at every `tools/list_changed` grew the gateway's tables without
 * bound: `Upstream.knownTools` and the Router's tool owners kept every name ever listed, and `Router.ownerOfTool`
 * canonicalised every one of them for a `tools/call` of a name it did not know (5 listings of 1,000 names: 5,000
 * canonical forms a call; 100 listings of 10,000, 35.5 ms of CPU a call). Now the listed owners are each upstream's
 * current listing, names listed before are remembered by canonical form up to MAX_LIST_ITEMS an upstream (a call
 * to one while its upstream is down is refused as unavailable), and an unknown name is one look-up.
 * Work counted by a counting `canonical`.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import type * as Names from '../../src/names.js';
import { MAX_LIST_ITEMS } from '../../src/mcp/listing.js';
import { Router } from '../../src/gateway/router.js';
import type { Upstream } from '../../src/gateway/upstream.js';
import { cleanupsAfterEach, gatewayOn, inMemoryClient, tempDir, text, writePolicy } from '../harness.js';

const counted = vi.hoisted(() => ({ canonical: 0 }));
vi.mock('../../src/names.js', async (importOriginal) => {
  const names = await importOriginal<typeof Names>();
  return {
    ...names,
    canonical: (name: string): string => {
      counted.canonical++;
      return names.canonical(name);
    },
  };
});

const cleanups = cleanupsAfterEach();
const LISTING = 1_000;

describe('atk-gwlist: an upstream listing fresh names at each tools/list_changed', { timeout: 120_000 }, () => {
  it('a call of an unknown name is one look-up, and a name listed before is still refused by name while down', async () => {
    const state = { generation: 0, listings: 0, down: false };
    let upstream: Server | undefined;
    const make = (): Server => {
      const server = new Server({ name: 'up', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
      server.setRequestHandler(ListToolsRequestSchema, () => {
        state.listings++;
        return {
          tools: Array.from({ length: LISTING }, (_, i) => ({
            name: `g${state.generation}_tool_${i}`,
            inputSchema: { type: 'object' },
          })),
        };
      });
      server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: 'ran' }] }));
      upstream = server;
      return server;
    };
    const policy = writePolicy(tempDir('atk-gwlist'), { rules: [{ name: 'all', result: 'allow' }] });
    const { gateway } = await gatewayOn(cleanups, policy, () => ({
      upstreams: {
        up: {
          prefix: false,
          transport: () => {
            const [a, b] = InMemoryTransport.createLinkedPair();
            // Once down, it stays down: each reconnection finds a closed transport.
            if (state.down) void b.close();
            else void make().connect(b);
            return a;
          },
        },
      },
    }));
    const client = await inMemoryClient(cleanups, gateway);
    for (let generation = 1; generation < 5; generation++) {
      state.generation = generation;
      await upstream!.sendToolListChanged();
      await expect.poll(() => state.listings, { timeout: 30_000 }).toBe(1 + generation);
      await expect.poll(() => gateway.registry.get(`g${generation}_tool_0`) !== undefined).toBe(true);
    }
    // Only the current listing is served.
    expect(gateway.registry.get('g0_tool_0')).toBeUndefined();
    counted.canonical = 0;
    const unknown = await client.callTool({ name: 'never_listed', arguments: {} });
    expect(unknown.isError).toBe(true);
    // On main: 5,000 and more (every name of every listing canonicalised for this one call).
    expect(counted.canonical).toBeLessThan(100);

    // Down: a name of the current listing and one of an earlier listing are refused as the upstream's.
    state.down = true;
    await upstream!.close();
    await expect.poll(() => gateway.upstreams.get('up')!.state).toBe('down');
    for (const name of ['g4_tool_7', 'g0_tool_7']) {
      const refused = await client.callTool({ name, arguments: {} });
      expect(refused.isError).toBe(true);
      expect(text(refused)).toMatch(/upstream "up" is unavailable/);
    }
    counted.canonical = 0;
    const stillUnknown = await client.callTool({ name: 'never_listed', arguments: {} });
    expect(stillUnknown.isError).toBe(true);
    expect(text(stillUnknown)).not.toMatch(/unavailable/);
    expect(counted.canonical).toBeLessThan(100);
  });
});

/** An upstream as the Router reads it: its namespace, prefix and the tools its connection lists now. */
function upstreamOf(namespace: string, prefixed: boolean): Upstream & { tools: string[]; ready: boolean } {
  const fake = {
    namespace,
    prefixed,
    tools: [] as string[],
    ready: true,
    get state() {
      return fake.ready ? 'ready' : 'down';
    },
    get connection() {
      return fake.ready ? { tools: fake.tools } : null;
    },
    own: (shown: string) =>
      prefixed ? (shown.startsWith(`${namespace}:`) ? shown.slice(namespace.length + 1) : undefined) : shown,
  };
  return fake as unknown as Upstream & { tools: string[]; ready: boolean };
}

const listing = (generation: number, count: number): string[] =>
  Array.from({ length: count }, (_, i) => `G${generation}_Tool_${i}`);

describe("the Router's tool owners", () => {
  it("are each upstream's current listing: a name no longer listed is not a listed owner", () => {
    const up = upstreamOf('up', false);
    const router = new Router(new Map([['up', up]]));
    up.tools = listing(1, 100);
    router.noteTools(up);
    expect(router.listedOwner('g1_tool_3')).toBe(up);
    up.tools = listing(2, 100);
    router.noteTools(up);
    expect(router.listedOwner('g1_tool_3')).toBeUndefined();
    expect(router.listedOwner('g2_tool_3')).toBe(up);
    // Remembered (by canonical form) as the upstream's, for a call while it is down.
    expect(router.ownerOfTool('G1_TOOL_3')).toBe(up);
  });

  it('remember at most MAX_LIST_ITEMS names an upstream listed before its current listing', () => {
    const up = upstreamOf('up', false);
    const other = upstreamOf('other', false);
    const router = new Router(
      new Map([
        ['up', up],
        ['other', other],
      ]),
    );
    other.tools = ['kept_by_other'];
    router.noteTools(other);
    for (let generation = 1; generation <= 3; generation++) {
      up.tools = listing(generation, MAX_LIST_ITEMS);
      router.noteTools(up);
    }
    up.ready = false;
    router.noteTools(up); // down: its last listing stays its own
    // On main every name ever listed stays: 30,000 here.
    expect(router.ownerOfTool('g1_tool_0')).toBeUndefined();
    expect(router.ownerOfTool(`g1_tool_${MAX_LIST_ITEMS - 1}`)).toBeUndefined();
    expect(router.ownerOfTool('g2_tool_0')).toBe(up);
    expect(router.ownerOfTool('g3_tool_0')).toBe(up);
    expect(router.listedOwner('g3_tool_0')).toBe(up);
    // Another upstream's names are not its to forget.
    expect(router.ownerOfTool('kept_by_other')).toBe(other);
  });

  it("a name another upstream lists now is that upstream's, and a name dropped by one upstream is not another's loss", () => {
    const a = upstreamOf('a', false);
    const b = upstreamOf('b', false);
    const router = new Router(
      new Map([
        ['a', a],
        ['b', b],
      ]),
    );
    a.tools = ['shared', 'only_a'];
    router.noteTools(a);
    b.tools = ['shared'];
    router.noteTools(b);
    expect(router.listedOwner('shared')).toBe(b);
    a.tools = ['only_a'];
    router.noteTools(a);
    expect(router.listedOwner('shared')).toBe(b);
  });
});

/** An upstream serving resources as the Router lists them: `uris` its listing now. */
function resourceUpstream(namespace: string): Upstream & { uris: string[] } {
  const fake = {
    namespace,
    prefixed: true,
    uris: [] as string[],
    state: 'ready',
    capabilities: { resources: {} },
    client: { listResources: () => Promise.resolve({ resources: fake.uris.map((uri) => ({ uri, name: uri })) }) },
    forward: <T>(scope: unknown, request: (scope: unknown) => Promise<T>) => request(scope),
    requestOptions: () => ({}),
  };
  return fake as unknown as Upstream & { uris: string[] };
}

describe("the Router's resource owners", () => {
  it("are each upstream's last listing: a URI it no longer lists is not routed to it", async () => {
    const a = resourceUpstream('a');
    const b = resourceUpstream('b');
    const router = new Router(
      new Map([
        ['a', a],
        ['b', b],
      ]),
    );
    a.uris = ['file:///g1/one'];
    await router.listResources();
    expect(await router.routeResource('file:///g1/one', undefined)).toBe(a);
    a.uris = ['file:///g2/one'];
    await router.listResources();
    expect(await router.routeResource('file:///g2/one', undefined)).toBe(a);
    // On main: still routed to a (every URI ever listed kept).
    await expect(router.routeResource('file:///g1/one', undefined)).rejects.toThrow(/no upstream is known/);
  });
});
