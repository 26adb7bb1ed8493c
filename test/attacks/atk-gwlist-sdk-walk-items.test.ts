/**
 * atk-gwlist: MAX_LIST_ITEMS (10,000) is checked by listBounded after each page it asks, but its first page is asked
 * without a cursor, and for that one the SDK's Client walks every page itself (up to listMaxPages, 64) and returns them
 * all as one. So an upstream whose pages are each just under the message bound is read, parsed and validated to its
 * 64th page before the item bound refuses it: 64 pages of 2,000 tools, 128,000 tools taken in (12.8 times the bound)
 * for a listing that is refused anyway; pages of 10,000: 640,000. At connect and at every `tools/list_changed`; the
 * same for prompts/list and resources/list if their first page is asked without a cursor. Counted as the tools the
 * upstream served before the refusal.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_LIST_ITEMS } from '../../src/mcp/index.js';
import { cleanupsAfterEach } from '../harness.js';
import { gatewayBefore, pagedUpstream } from '../gateway/fixtures/paged-upstream.js';

const cleanups = cleanupsAfterEach();
afterEach(() => {
  vi.restoreAllMocks();
});

describe('atk-gwlist: the item bound of a listing the SDK walks itself', { timeout: 120_000 }, () => {
  it('takes in at most MAX_LIST_ITEMS and one page before refusing tools/list', async () => {
    const PAGE = 2_000;
    const served = { pages: 0, items: 0 };
    const page = (n: number) => {
      served.items += PAGE;
      return {
        items: Array.from({ length: PAGE }, (_, i) => ({ name: `t${n * PAGE + i}`, inputSchema: { type: 'object' } })),
        next: true,
      };
    };
    const { gateway } = await gatewayBefore(cleanups, () => pagedUpstream('tools', page, served));
    const up = gateway.upstreams.get('up')!;
    expect(up.state).toBe('down');
    // On main: 64 pages, 128,000 tools served (the SDK's own walk) before the refusal names a bound.
    expect(served.items).toBeLessThanOrEqual(MAX_LIST_ITEMS + PAGE);
  });
});
