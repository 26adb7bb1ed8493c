/**
 * The item bound inside the SDK's own walk (src/mcp/listing.ts listingTap). Asked without a cursor, the SDK's
 * `listTools`/`listPrompts`/`listResources`/`listResourceTemplates` walk up to `listMaxPages` (64) pages before
 * returning, so listBounded saw the items only after the whole walk: 64 pages of 2,000 tools, 128,000 taken in before
 * the refusal (test/attacks/atk-gwlist-sdk-walk-items.test.ts). The tap on the client's transport counts a listing's
 * items page by page (a page asked with a cursor continuing the count of the page that gave it) and answers the page
 * past MAX_LIST_ITEMS with an error naming the bound, so the walk stops there. Counted in messages and in the items
 * an in-process upstream served.
 */
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { describe, expect, it } from 'vitest';
import { ToolRegistry } from '../../src/index.js';
import { connectMcpServer, MAX_LIST_ITEMS, MAX_LIST_PAGES } from '../../src/mcp/index.js';
import { listingTap } from '../../src/mcp/listing.js';
import { cleanupsAfterEach } from '../harness.js';
import { pagedUpstream } from '../gateway/fixtures/paged-upstream.js';

const cleanups = cleanupsAfterEach();

type Tap = ReturnType<typeof listingTap>;
let ids = 0;
/** Asks one page of `method` through `tap` and answers it with `count` items; what the client would see, or undefined. */
function page(tap: Tap, method: string, key: string, count: number, cursor?: string, next?: string) {
  const id = ++ids;
  tap.outbound({ jsonrpc: '2.0', id, method, ...(cursor === undefined ? {} : { params: { cursor } }) } as never);
  const items = Array.from({ length: count }, (_, i) => ({ name: `i${i}` }));
  return tap.inbound({
    jsonrpc: '2.0',
    id,
    result: { [key]: items, ...(next === undefined ? {} : { nextCursor: next }) },
  } as never) as { error?: { message: string } } | undefined;
}

describe('listingTap', () => {
  it.each([
    ['tools/list', 'tools'],
    ['prompts/list', 'prompts'],
    ['resources/list', 'resources'],
    ['resources/templates/list', 'resourceTemplates'],
  ])('%s: the page that takes a listing past MAX_LIST_ITEMS is answered by an error naming it', (method, key) => {
    const tap = listingTap();
    expect(page(tap, method, key, 4_000, undefined, 'a')).toBeUndefined();
    expect(page(tap, method, key, 6_000, 'a', 'b')).toBeUndefined(); // 10,000: the bound itself
    const refused = page(tap, method, key, 1, 'b', 'c');
    expect(refused?.error?.message).toBe(
      `${method}: the server listed more than 10,000 items (MAX_LIST_ITEMS); none is kept`,
    );
    // A new listing (no cursor) counts from 0 again.
    expect(page(tap, method, key, MAX_LIST_ITEMS, undefined, 'a')).toBeUndefined();
  });

  it('counts each method on its own, and a cursor it does not know from 0', () => {
    const tap = listingTap();
    expect(page(tap, 'tools/list', 'tools', 9_000, undefined, '1')).toBeUndefined();
    expect(page(tap, 'prompts/list', 'prompts', 9_000, undefined, '1')).toBeUndefined();
    expect(page(tap, 'prompts/list', 'prompts', 1_000, '1')).toBeUndefined();
    expect(page(tap, 'tools/list', 'tools', 1_001, '1')?.error?.message).toMatch(/^tools\/list: .*MAX_LIST_ITEMS/);
    expect(page(tap, 'tools/list', 'tools', MAX_LIST_ITEMS, 'unknown')).toBeUndefined();
  });

  it('counts the pages of a listing: the page past MAX_LIST_PAGES is answered by an error naming it', () => {
    const tap = listingTap();
    expect(page(tap, 'resources/list', 'resources', 0, undefined, '1')).toBeUndefined();
    for (let n = 1; n < MAX_LIST_PAGES; n++)
      expect(page(tap, 'resources/list', 'resources', 0, String(n), String(n + 1))).toBeUndefined();
    expect(page(tap, 'resources/list', 'resources', 0, String(MAX_LIST_PAGES))?.error?.message).toBe(
      "resources/list: the server's pages went on past 64 (MAX_LIST_PAGES); none is kept",
    );
  });

  it('keeps at most 4 × MAX_LIST_PAGES cursors: the oldest is forgotten first', () => {
    const tap = listingTap();
    expect(page(tap, 'tools/list', 'tools', 9_000, undefined, 'first')).toBeUndefined();
    for (let i = 0; i < 4 * MAX_LIST_PAGES - 1; i++)
      expect(page(tap, 'tools/list', 'tools', 1, undefined, `c${i}`)).toBeUndefined();
    // Still known: 9,000 + 1,001 refused.
    expect(page(tap, 'tools/list', 'tools', 1_001, 'first')?.error).toBeDefined();
    expect(page(tap, 'tools/list', 'tools', 1, undefined, 'one more')).toBeUndefined();
    // One cursor more than it keeps: 'first' forgotten, counted from 0.
    expect(page(tap, 'tools/list', 'tools', 1_001, 'first')).toBeUndefined();
  });
});

describe("the SDK's walk of tools/list, item-bounded", { timeout: 120_000 }, () => {
  it('a refresh past MAX_LIST_ITEMS stops at the page past it and keeps the tools', async () => {
    const PAGE = 2_000;
    let big = false;
    const served = { pages: 0, items: 0 };
    const server = pagedUpstream(
      'tools',
      (n) => {
        const length = big ? PAGE : 3;
        served.items += length;
        return {
          items: Array.from({ length }, (_, i) => ({ name: `t${n * PAGE + i}`, inputSchema: { type: 'object' } })),
          next: big,
        };
      },
      served,
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const registry = new ToolRegistry();
    const connection = await connectMcpServer(registry, { prefix: 'up', transport: clientSide });
    cleanups.push(() => connection.close());
    expect(connection.tools).toEqual(['up:t0', 'up:t1', 'up:t2']);
    big = true;
    served.items = 0;
    served.pages = 0;
    await expect(connection.refresh()).rejects.toThrow(
      'tools/list: the server listed more than 10,000 items (MAX_LIST_ITEMS); none is kept',
    );
    // Pages 0…5: 12,000 served, the sixth refused (on main: 64 pages, 128,000, before the refusal).
    expect(served.pages).toBe(6);
    expect(served.items).toBe(MAX_LIST_ITEMS + PAGE);
    expect(connection.tools).toEqual(['up:t0', 'up:t1', 'up:t2']);
  });

  it("a Client given with listMaxPages 0 (the SDK's walk without end) stops at the page past MAX_LIST_PAGES", async () => {
    const served = { pages: 0 };
    // 200 pages of no tool: on main all 200 walked, the empty listing taken.
    const server = pagedUpstream('tools', (n) => ({ items: [], next: n < 199 }), served);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'given', version: '1.0.0' }, { listMaxPages: 0 });
    await client.connect(clientSide);
    cleanups.push(() => client.close());
    await expect(connectMcpServer(new ToolRegistry(), { prefix: 'up', client })).rejects.toThrow(
      "tools/list: the server's pages went on past 64 (MAX_LIST_PAGES); none is kept",
    );
    expect(served.pages).toBe(MAX_LIST_PAGES + 1);
  });
});
