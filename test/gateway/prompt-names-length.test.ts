/**
 * An upstream's prompt names are at most NAME_LENGTH_MAX (1,024) characters, as tool names (src/gateway/router.ts
 * `notePrompts`): `prompts/list` kept every name an upstream listed in a Set, and V8 hashes a string past 16,383
 * characters by its length alone, so such names of one length are each compared with all the others (4,000 names of
 * 16,400 characters: ~20 s in a plain Map). Longer ones are neither listed nor kept, with one warning a listing.
 * Counted, through the gateway with a real (in-process) upstream: the longest key any Map or Set was given.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NAME_LENGTH_MAX } from '../../src/names.js';
import { cleanupsAfterEach } from '../harness.js';
import { HASHED_LENGTH_MAX, watchLongestKey } from '../long-keys.js';
import { gatewayBefore, heardWarnings, pagedUpstream } from './fixtures/paged-upstream.js';

const cleanups = cleanupsAfterEach();
const longestKey = watchLongestKey({ sets: true });
afterEach(() => {
  vi.restoreAllMocks();
});

describe("an upstream's prompt names", { timeout: 60_000 }, () => {
  it('past NAME_LENGTH_MAX (1,024) characters are neither listed nor kept; the others are listed', async () => {
    expect(NAME_LENGTH_MAX).toBe(1_024);
    const long = Array.from({ length: 300 }, (_, i) => `${'p'.repeat(16_400)}${String(i).padStart(4, '0')}`);
    const names = [...long, 'a'.repeat(1_024), 'summarise'];
    const served = { pages: 0 };
    const page = () => ({ items: names.map((name) => ({ name })), next: false });
    const { client } = await gatewayBefore(cleanups, () => pagedUpstream('prompts', page, served), { prefix: false });
    const warnings = heardWarnings();
    const listed = (await client.listPrompts()).prompts.map((p) => p.name);
    expect(served.pages).toBe(1);
    expect(listed).toEqual(['a'.repeat(1_024), 'summarise']);
    // No Map or Set was given a name past the bound (on main: the router's Set of the upstream's names held all 300).
    expect(longestKey()).toBeLessThanOrEqual(HASHED_LENGTH_MAX);
    expect(warnings.filter((w) => w.code === 'TOOLGATE_GATEWAY_PROMPT_SKIPPED').map((w) => w.message)).toEqual([
      'toolgate gateway: upstream "up" listed 300 prompts named past 1,024 characters (NAME_LENGTH_MAX); not listed',
    ]);
  });
});
