/**
 * Attack on the limiter's counter keys (f6f2bed: "two parties never share a budget"): a limit per caller keys
 * on the context's `caller.id`. An id that is not a string — a numeric claim mapped as is by a gateway's
 * `context` function (`caller: { id: auth.extra.user_id }`), the common JWT `sub`/`user_id` of a number — was
 * read as no caller at all (limitSubject: `typeof id === 'string' ? id : null`): every such caller, and every
 * call with no caller, drew on ONE counter, so caller 7 spent caller 8's budget. A tenant id of a number was
 * keyed by its text, a caller's as nothing. Also checked: the ids the brief names ("", '""', '%22%22', '=',
 * ':', NFC and NFD forms, "null", "undefined", lone surrogates) give distinct keys or refuse, never a shared one.
 */
import { describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { Limiter, type LimitSubject } from '../../src/limits/limiter.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';

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
    const ids = [
      '',
      '""',
      '%22%22',
      '=',
      '==',
      ':',
      '%3A',
      'null',
      'undefined',
      'caf\u00e9',
      'cafe\u0301',
      'a:caller=b',
    ];
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
