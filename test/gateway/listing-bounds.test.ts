/**
 * An upstream's listings are bounded (src/mcp/listing.ts): at most MAX_LIST_PAGES (64) pages and MAX_LIST_ITEMS
 * (10,000) items of one listing. src/mcp/tools.ts read every page of `tools/list` and Router.listAll every page of
 * `prompts/list` and `resources/list` with no bound of their own: the pages were bounded only by the SDK's default
 * `listMaxPages` (64, a Client built otherwise walks without end) and the items not at all (11,000 tools registered,
 * 11,000 prompts listed). Past a bound an upstream's tools are refused at connect (the upstream down, the reason
 * naming the bound) and its prompts or resources list nothing (a warning naming it), as any failed listing.
 * Through the gateway with a real (in-process) upstream; pages counted as the upstream served them.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_LIST_ITEMS, MAX_LIST_PAGES } from '../../src/mcp/index.js';
import { cleanupsAfterEach } from '../harness.js';
import { gatewayBefore, heardWarnings, pagedUpstream } from './fixtures/paged-upstream.js';

const cleanups = cleanupsAfterEach();
afterEach(() => {
  vi.restoreAllMocks();
});

const tool = (i: number) => ({ name: `t${i}`, inputSchema: { type: 'object' } });

describe("an upstream's listings", { timeout: 120_000 }, () => {
  it('tools/list past MAX_LIST_ITEMS (10,000) tools: the upstream is refused, the reason naming the bound', async () => {
    expect(MAX_LIST_ITEMS).toBe(10_000);
    const served = { pages: 0 };
    const page = (n: number) => ({ items: Array.from({ length: 1_000 }, (_, i) => tool(n * 1_000 + i)), next: n < 10 });
    const { gateway, client } = await gatewayBefore(cleanups, () => pagedUpstream('tools', page, served));
    const up = gateway.upstreams.get('up')!;
    expect(served.pages).toBe(11);
    expect(up.state).toBe('down');
    expect(up.reason).toMatch(/tools\/list: the server listed more than 10,000 items \(MAX_LIST_ITEMS\); none is kept/);
    expect(gateway.registry.list()).toEqual([]);
    expect((await client.listTools()).tools).toEqual([]);
    expect((await client.callTool({ name: 'up:t0', arguments: {} })).isError).toBe(true);
  });

  it('tools/list paging without end: the upstream is refused after MAX_LIST_PAGES (64) pages', async () => {
    expect(MAX_LIST_PAGES).toBe(64);
    const served = { pages: 0 };
    const page = (n: number) => ({ items: [tool(n)], next: true });
    const { gateway } = await gatewayBefore(cleanups, () => pagedUpstream('tools', page, served));
    const up = gateway.upstreams.get('up')!;
    expect(served.pages).toBe(64);
    expect(up.state).toBe('down');
    expect(up.reason).toMatch(/tools\/list: the server's pages went on past 64 \(MAX_LIST_PAGES\); none is kept/);
    expect(gateway.registry.list()).toEqual([]);
  });

  it.each(['prompts', 'resources'] as const)(
    '%s past MAX_LIST_ITEMS, or paging without end: nothing of the upstream listed, a warning naming the bound',
    async (capability) => {
      const item = (i: number) =>
        capability === 'prompts' ? { name: `p${i}` } : { uri: `docs://kb/${i}`, name: `r${i}` };
      let last = 10; // pages 0…10 of 1,000 items: 11,000
      const page = (n: number) => ({
        items: Array.from({ length: last === Infinity ? 1 : 1_000 }, (_, i) => item(n * 1_000 + i)),
        next: n < last,
      });
      const served = { pages: 0 };
      const { client } = await gatewayBefore(cleanups, () => pagedUpstream(capability, page, served));
      const list = async () =>
        capability === 'prompts' ? (await client.listPrompts()).prompts : (await client.listResources()).resources;
      const method = `${capability}/list`;
      const failed = (why: string) => `toolgate gateway: ${method} of upstream "up" failed: ${method}: ${why}`;
      let warnings = heardWarnings();
      expect(await list()).toEqual([]);
      expect(served.pages).toBe(11);
      expect(warnings.map((w) => [w.code, w.message])).toEqual([
        ['TOOLGATE_GATEWAY_LIST', failed('the server listed more than 10,000 items (MAX_LIST_ITEMS); none is kept')],
      ]);
      vi.restoreAllMocks();
      last = Infinity;
      served.pages = 0;
      warnings = heardWarnings();
      expect(await list()).toEqual([]);
      expect(served.pages).toBe(64);
      expect(warnings.map((w) => [w.code, w.message])).toEqual([
        ['TOOLGATE_GATEWAY_LIST', failed("the server's pages went on past 64 (MAX_LIST_PAGES); none is kept")],
      ]);
    },
  );

  it.each(['prompts', 'resources'] as const)(
    "%s: the SDK's own walk stops at the page past MAX_LIST_ITEMS, not at its 64th page",
    async (capability) => {
      // Pages of 2,000 without end: pages 0…5 (12,000) served, then the refusal; on main 64 pages, 128,000 items.
      const item = (i: number) =>
        capability === 'prompts' ? { name: `p${i}` } : { uri: `docs://kb/${i}`, name: `r${i}` };
      const page = (n: number) => ({ items: Array.from({ length: 2_000 }, (_, i) => item(n * 2_000 + i)), next: true });
      const served = { pages: 0 };
      const { client } = await gatewayBefore(cleanups, () => pagedUpstream(capability, page, served));
      const method = `${capability}/list`;
      const warnings = heardWarnings();
      expect(
        capability === 'prompts' ? (await client.listPrompts()).prompts : (await client.listResources()).resources,
      ).toEqual([]);
      expect(served.pages).toBe(6);
      expect(warnings.map((w) => [w.code, w.message])).toEqual([
        [
          'TOOLGATE_GATEWAY_LIST',
          `toolgate gateway: ${method} of upstream "up" failed: ${method}: the server listed more than 10,000 items (MAX_LIST_ITEMS); none is kept`,
        ],
      ]);
    },
  );
});
