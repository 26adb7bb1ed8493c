/**
 * Attack on the limiter's counter keys (f6f2bed: "two parties never share a budget"): a limit per caller keys
 * on the context's `caller.id`. An id that is not a string — a numeric claim mapped as is by a gateway's
 * `context` function (`caller: { id: auth.extra.user_id }`), the common JWT `sub`/`user_id` of a number — was
 * read as no caller at all (limitSubject: `typeof id === 'string' ? id : null`): every such caller, and every
 * call with no caller, drew on ONE counter, so caller 7 spent caller 8's budget. A tenant id of a number was
 * keyed by its text, a caller's as nothing. Also checked: the ids the brief names ("", '""', '%22%22', '=',
 * ':', NFC and NFD forms, "null", "undefined", lone surrogates) give distinct keys or refuse, never a shared one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { Limiter, type LimitSubject } from '../../src/limits/limiter.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';
import { PostgresStores } from '../../src/stores/postgres.js';
import { RedisStores } from '../../src/stores/redis.js';
import type { CounterStore } from '../../src/stores/types.js';
import { PG_URL, REDIS_URL, uniqueName } from '../stores/servers.js';

/** Ids that a careless encoding would fold together. */
const IDS = ['', '""', '%22%22', '=', '==', ':', '%3A', 'null', 'undefined', 'caf\u00e9', 'cafe\u0301', 'a:caller=b'];

function registryPerCaller() {
  const limiter = new Limiter({
    counters: new MemoryCounterStore(),
    limits: [{ name: 'refunds', per: ['caller'], tools: ['refund'], max: 1, window: '1h' }],
  });
  const registry = new ToolRegistry({ limiter });
  registry.register(defineTool({ name: 'refund', parameters: { type: 'object' }, execute: () => 'ran' }));
  return registry;
}

describe('atk: limiter keys of distinct parties', () => {
  it('two callers whose ids are numbers never share a counter (nor with calls of no caller)', async () => {
    const registry = registryPerCaller();
    const as = (id: unknown) => ({ caller: { id } }) as never;
    const seven = await registry.invoke('refund', {}, as(7));
    const eight = await registry.invoke('refund', {}, as(8));
    const none = await registry.invoke('refund', {}, {});
    // Caller 8 and the call with no caller spent nothing: neither is refused on another party's counter. (A
    // caller id that is not a string may be refused, as a limit that cannot be keyed: fail closed.)
    const spentByAnother = /refused by the limit "refunds"/;
    expect([seven.content, eight.content, none.content].filter((c) => spentByAnother.test(String(c)))).toEqual([]);
    expect(none.status).toBe('ok');
  });

  it('tricky string ids each get their own key (or none at all), on every dimension', () => {
    const limiter = new Limiter({
      counters: new MemoryCounterStore(),
      limits: [{ name: 'one', per: ['tenant', 'caller', 'agent', 'run'], max: 1, window: 1000 }],
    });
    const ids = IDS;
    const base: LimitSubject = { tenant: 't', caller: 'c', agent: 'g', runId: 'r', tool: 'x', tags: [] };
    for (const d of ['tenant', 'caller', 'agent', 'runId'] as const) {
      const keys = new Map<string, unknown>();
      const values: unknown[] = d === 'agent' ? ids : [null, ...ids];
      for (const v of values) {
        const key = limiter.applicable({ ...base, [d]: v })[0]!.key;
        expect(keys.get(key), `${d} ${JSON.stringify(v)} shares ${key}`).toBeUndefined();
        keys.set(key, v);
      }
      expect(() => limiter.applicable({ ...base, [d]: '\ud800' })).toThrow();
    }
  });
});

describe('atk: tricky ids on the real counter stores each draw on their own counter', { timeout: 60_000 }, () => {
  const prefix = uniqueName('keyids');
  const redis = new RedisStores({ url: REDIS_URL, prefix });
  const schema = uniqueName('keyids');
  const pg = new PostgresStores({ connectionString: PG_URL, schema });
  beforeAll(async () => {
    await pg.migrate();
  });
  afterAll(async () => {
    await redis.clear(prefix);
    await redis.close();
    await pg.dropSchema();
    await pg.close();
  });
  const stores: [string, () => CounterStore][] = [
    ['memory', () => new MemoryCounterStore()],
    ['redis', () => redis.counters],
    ['postgres', () => pg.counters],
  ];
  for (const [name, counters] of stores)
    it(`${name}: max 1 per tenant and caller, one call of each party allowed`, async () => {
      const limiter = new Limiter({
        counters: counters(),
        prefix: `${prefix}_${name}`,
        limits: [{ name: 'one', per: ['tenant', 'caller'], max: 1, window: 60_000 }],
      });
      const parties: [string | null, string | null][] = [[null, null]];
      for (const id of IDS) parties.push([id, null], [null, id], [id, id]);
      const allowed: boolean[] = [];
      for (const [tenant, caller] of parties)
        allowed.push(
          (await limiter.charge({ tenant, caller, agent: 'g', runId: null, tool: 'x', tags: [] })).allowed === true,
        );
      expect(allowed.every(Boolean), JSON.stringify(parties.filter((_, i) => !allowed[i]))).toBe(true);
    });
});
