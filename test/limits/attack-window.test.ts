/**
 * A limit's window as long as a policy can write it: a window past what the Redis counter script can write as
 * a key's expiry (`string.format('%d', …)` of more than 2^63 ms gives a negative time, and PEXPIREAT with it
 * deletes the key) must not leave the limit uncounted: either the window is refused when the limit is read,
 * or the calls over the max are refused — on Redis as in memory.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { Limiter, type LimitSubject } from '../../src/limits/limiter.js';
import { MAX_WINDOW_MS } from '../../src/limits/rules.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';
import { RedisStores } from '../../src/stores/redis.js';
import type { CounterStore } from '../../src/stores/types.js';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { parsePolicy } from '../../src/policy-file/load.js';
import { REDIS_URL, uniqueName } from '../stores/servers.js';

const prefix = uniqueName('awin');
const redis = new RedisStores({ url: REDIS_URL, prefix });
afterAll(async () => {
  await redis.clear(prefix);
  await redis.close();
});

const subject: LimitSubject = { tenant: 't', caller: 'c', agent: 'a', runId: null, tool: 'refund', tags: [] };

/** How many of `calls` charges were allowed; null when the limit (or the charge) was refused as written. */
async function allowedOf(
  counters: CounterStore,
  window: number | string,
  name: string,
  calls = 4,
): Promise<number | null> {
  let limiter: Limiter;
  try {
    limiter = new Limiter({ counters, limits: [{ name, max: 2, window }] });
  } catch {
    return null;
  }
  let allowed = 0;
  for (let i = 0; i < calls; i++) if ((await limiter.charge(subject)).allowed) allowed++;
  return allowed;
}

describe('a limit with a very long window', () => {
  for (const [label, window] of [
    ['1e19 ms', 1e19],
    ['Number.MAX_VALUE ms', Number.MAX_VALUE],
    ["'200000000000000d'", '200000000000000d'],
  ] as const)
    it(`redis: max 2 per ${label} never allows a third call`, async () => {
      const allowed = await allowedOf(redis.counters, window, `w${label.length}${String(window).length}`);
      if (allowed !== null) expect(allowed).toBe(2);
    });

  it('a policy file with `window: 10000000000000000000` on Redis: the third refund does not run', () => {
    const loaded = parsePolicy(`version: 1
rules:
  - { name: refunds, tools: [refund], result: allow }
limits:
  - { name: refunds, tools: [refund], max: 2, window: 10000000000000000000 }
`);
    // Refused as written: fine (nothing can run over it).
    if (!loaded.ok) return;
    let ran = 0;
    const registry = new ToolRegistry({ limiter: loaded.policy.limiter(redis.counters, { prefix: `${prefix}_file` }) });
    registry.register(defineTool({ name: 'refund', parameters: { type: 'object' }, execute: () => ++ran }));
    registry.setPermissionPolicy(loaded.policy.policy);
    return (async () => {
      for (let i = 0; i < 4; i++) await registry.invoke('refund', {}, loaded.policy.context({}));
      expect(ran).toBe(2);
    })();
  });

  it('redis store: a charge whose window cannot be kept is refused, never counted as nothing', async () => {
    const charge = { key: 'raw-huge', cost: 1, limit: 2, windowMs: 1e19 };
    const verdicts = [];
    for (let i = 0; i < 4; i++) verdicts.push(await redis.counters.consume([charge]).catch(() => null));
    expect(verdicts.filter((v) => v?.allowed === true).length).toBeLessThanOrEqual(2);
  });

  it('memory: a refusal under a window past the Date range still reads as a limit refusal (not "could not be checked")', async () => {
    const counters = new MemoryCounterStore();
    let limiter: Limiter;
    try {
      limiter = new Limiter({ counters, limits: [{ name: 'far', max: 1, window: 1e16 }] });
    } catch {
      return;
    }
    await limiter.charge(subject);
    const refused = await limiter.charge(subject).catch((error: unknown) => ({ thrown: String(error) }));
    expect(refused).toMatchObject({ allowed: false, stage: 'limit', limit: 'far' });
  });

  it("the policy schema's `window` maximum is the longest window a counter keeps (MAX_WINDOW_MS)", () => {
    const schema = JSON.parse(readFileSync(new URL('../../schema/policy.schema.json', import.meta.url), 'utf8')) as {
      definitions: Record<string, { properties: { window: { oneOf: { type: string; maximum?: number }[] } } }>;
    };
    const limit = Object.values(schema.definitions).find((d) => d.properties?.window !== undefined)!;
    expect(limit.properties.window.oneOf.find((o) => o.type === 'number')?.maximum).toBe(MAX_WINDOW_MS);
    const file = (window: string | number): string => `version: 1
limits:
  - { name: l, max: 2, window: ${window} }
`;
    expect(parsePolicy(file(MAX_WINDOW_MS)).ok).toBe(true);
    const over = parsePolicy(file(MAX_WINDOW_MS + 1));
    expect(over.ok).toBe(false);
    if (!over.ok) expect(over.issues.map((i) => i.code)).toContain('schema');
    // A string is checked by the loader (parseWindow) against the same bound.
    expect(parsePolicy(file("'365250d'")).ok).toBe(true);
    expect(parsePolicy(file("'365251d'")).ok).toBe(false);
  });
});
