/**
 * The per-call allowlist verdict and its cache (src/allowlist-cache.ts, issue 12): layer arrays are
 * indexed once and reused, and a plain array changed in place is honoured on the very next call.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, defineTool, ToolAllowlist, ToolRegistry, type GateContext } from '../../src/index.js';
import { fullWidth, prng } from '../../bench/scenario.js';
import { canonical } from '../../src/names.js';
import { jointsBuilt } from '../../src/allowlist-cache.js';

const NAMES = ['search', 'refund', 'sudo', 'fetch_url'];

function registry(names: readonly string[] = NAMES): { registry: ToolRegistry; ran: string[] } {
  const ran: string[] = [];
  const r = new ToolRegistry();
  for (const name of names)
    r.register(defineTool({ name, parameters: { type: 'object' }, execute: () => void ran.push(name) }));
  return { registry: r, ran };
}

/** Dispatches often enough that every array in the context is past its first look and indexed. */
async function warm(r: ToolRegistry, name: string, context: () => GateContext): Promise<void> {
  for (let i = 0; i < 4; i++) expect((await r.invoke(name, {}, context())).status).toBe('ok');
}

describe('a plain (unfrozen) layer array changed in place', () => {
  it('a plan downgraded by splice refuses on the next call', async () => {
    const { registry: r, ran } = registry();
    const plan = { tools: ['search', 'refund', 'fetch_url'] };
    const agent = { name: 'concierge', tools: [...NAMES] };
    // A new context object per request, as a server writes it; the agent and the plan are long-lived.
    const context = (): GateContext => ({ agent, tenant: { id: 'acme', tools: plan.tools } });
    await warm(r, 'refund', context);
    plan.tools.splice(plan.tools.indexOf('refund'), 1);
    const refused = await r.invoke('refund', {}, context());
    expect(refused.status).toBe('refused');
    expect(refused.decision).toMatchObject({ stage: 'allowlist', layer: 'tenant' });
    expect(ran.filter((t) => t === 'refund')).toHaveLength(4);
    // The rest of the plan still holds, also where the splice moved the entries.
    expect((await r.invoke('fetch_url', {}, context())).status).toBe('ok');
  });

  it('every kind of in-place change is honoured: assignment, length, pop, an upgrade by push', async () => {
    const { registry: r } = registry();
    const tools = ['search', 'refund'];
    const context = (): GateContext => ({ tenant: { id: 't', tools } });
    await warm(r, 'search', context);
    await warm(r, 'refund', context);
    tools[0] = 'sudo'; // same length, other entry
    expect((await r.invoke('search', {}, context())).decision).toMatchObject({ layer: 'tenant' });
    expect((await r.invoke('sudo', {}, context())).status).toBe('ok');
    tools.pop();
    expect((await r.invoke('refund', {}, context())).decision).toMatchObject({ layer: 'tenant' });
    tools.push('fetch_url'); // an upgrade applies at once too
    expect((await r.invoke('fetch_url', {}, context())).status).toBe('ok');
    tools.length = 0;
    expect((await r.invoke('sudo', {}, context())).decision).toMatchObject({ layer: 'tenant' });
    expect((await r.invoke('fetch_url', {}, context())).decision).toMatchObject({ layer: 'tenant' });
  });

  it("the agent's declaration and the caller's scopes are honoured the same way", async () => {
    const { registry: r } = registry();
    const declared = ['search', 'refund'];
    const scopes = ['search', 'refund'];
    const context = (): GateContext => ({ agent: { name: 'bot', tools: declared }, caller: { scopes } });
    await warm(r, 'refund', context);
    scopes.splice(1, 1);
    expect((await r.invoke('refund', {}, context())).decision).toMatchObject({ layer: 'caller' });
    declared.splice(0, 1);
    expect((await r.invoke('search', {}, context())).decision).toMatchObject({ layer: 'not_declared' });
  });

  it('an entry respelled in place keeps its permission; a declaration broken in place is reported', async () => {
    const { registry: r } = registry();
    const declared = ['search', 'refund'];
    const context = (): GateContext => ({ agent: { name: 'bot', tools: declared } });
    await warm(r, 'search', context);
    declared[0] = 'SEARCH';
    expect((await r.invoke('search', {}, context())).status).toBe('ok');
    declared.push('Refund'); // one permission spelled twice: a broken declaration
    await expect(r.invoke('sudo', {}, context())).rejects.toThrow(ConfigurationError);
  });

  it('the listed allowlist (what a model is shown) follows the change too', async () => {
    const { registry: r } = registry();
    const plan = ['search', 'refund', 'sudo'];
    const context = (): GateContext => ({ agent: { name: 'bot', tools: NAMES }, tenant: { tools: plan } });
    for (let i = 0; i < 3; i++) expect(r.allowlist(context()).names).toEqual(['search', 'refund', 'sudo']);
    plan.splice(1, 1);
    expect(r.allowlist(context()).names).toEqual(['search', 'sudo']);
    expect(r.schemas('openai-chat', context()).map((s) => JSON.stringify(s))).toHaveLength(2);
    plan.push('fetch_url');
    expect(r.allowlist(context()).names).toEqual(['search', 'sudo', 'fetch_url']);
  });
});

describe('the verdict reads what it needs', () => {
  it('a dispatch with an indexed declaration reads one entry of it, not the whole declaration', async () => {
    const names = Array.from({ length: 1000 }, (_, i) => `tool_${i}`);
    const { registry: r } = registry(names);
    let reads = 0;
    const declared = new Proxy([...names], {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const context = (): GateContext => ({ agent: { name: 'bot', tools: declared } });
    await warm(r, 'tool_7', context);
    reads = 0;
    for (let i = 0; i < 10; i++) expect((await r.invoke(`tool_${i * 97}`, {}, context())).status).toBe('ok');
    expect(reads).toBeLessThanOrEqual(10);
  });
});

describe('layers of every shape', () => {
  it('fresh arrays per request, other spellings, Sets and generators all decide alike', async () => {
    const { registry: r } = registry();
    const cases: [NonNullable<GateContext['tenant']>, string, boolean][] = [
      [{ tools: ['Search'] }, 'search', true],
      [{ tools: ['search'] }, 'ＳＥＡＲＣＨ', true],
      [{ tools: ['refund'] }, 'search', false],
      [{ tools: new Set(['refund', 'search']) }, 'search', true],
      [{ tools: new Set(['refund']) }, 'search', false],
      [{ tools: (function* () { yield 'sudo'; yield 'search'; })() }, 'search', true], // prettier-ignore
      [{ tools: Object.freeze(['search']) }, 'SEARCH', true],
      [{ tools: Object.freeze([]) }, 'search', false],
      [{ tools: [] }, 'search', false],
    ];
    for (const [tenant, name, permitted] of cases) {
      const result = await r.invoke(name, {}, { tenant });
      expect(result.status, `${name} under ${JSON.stringify([...((tenant.tools ?? []) as Iterable<string>)])}`).toBe(
        permitted ? 'ok' : 'refused',
      );
    }
  });

  it('a bad entry is a ConfigurationError on the first call and on a cached one', async () => {
    const { registry: r } = registry();
    const tools: unknown[] = ['search'];
    const context = (): GateContext => ({ tenant: { tools: tools as string[] } });
    await expect(r.invoke('search', {}, { tenant: { tools: ['search', 7 as unknown as string] } })).rejects.toThrow(
      /tenant layer: a tool name must be a string, got number 7/,
    );
    await warm(r, 'search', context);
    tools.push(null);
    await expect(r.invoke('refund', {}, context())).rejects.toThrow(ConfigurationError);
    await expect(r.invoke('search', {}, { caller: { scopes: 'search' } })).rejects.toThrow(
      /caller layer: expected an iterable/,
    );
    await expect(r.invoke('search', {}, { agent: { name: 'a', tools: ['search', 'sea\u200brch'] } })).rejects.toThrow(
      /invisible/,
    );
  });
});

describe('the cache is never stale (property)', () => {
  it('after any sequence of in-place changes each verdict equals a fresh resolve of the same layers', async () => {
    const names = ['search', 'refund', 'sudo', 'fetch_url', 'export', 'delete_user'];
    const { registry: r } = registry(names);
    const random = prng(20261201);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const spell = (name: string): string => (random() < 0.3 ? name.toUpperCase() : name);
    const declared = [...names];
    const tenant = names.slice(0, 4);
    const scopes = names.slice(2);
    const context = (): GateContext => ({
      agent: { name: 'bot', tools: declared },
      tenant: { id: 't', tools: tenant },
      caller: { id: 'u', scopes },
    });
    /** The agent's declaration stays a valid one (no name twice); the other layers take anything. */
    const absentFrom = (layer: string[]): string[] =>
      names.filter((n) => !layer.some((e) => e.toLowerCase() === n.toLowerCase()));
    const mutate = (layer: string[], isDeclaration: boolean): string => {
      const op = pick(['splice', 'push', 'assign', 'pop', 'clear', 'respell']);
      const fresh = isDeclaration ? absentFrom(layer) : names;
      if (op === 'splice' && layer.length > 0) layer.splice(Math.floor(random() * layer.length), 1);
      else if (op === 'push' && fresh.length > 0) layer.push(spell(pick(fresh)));
      else if (op === 'assign' && layer.length > 0 && fresh.length > 0)
        layer[Math.floor(random() * layer.length)] = spell(pick(fresh));
      else if (op === 'pop') layer.pop();
      else if (op === 'clear' && random() < 0.2) layer.length = 0;
      else if (op === 'respell' && layer.length > 0) {
        const at = Math.floor(random() * layer.length);
        layer[at] = spell(layer[at]!.toLowerCase());
      } else if (fresh.length > 0) layer.push(spell(pick(fresh)));
      return op;
    };
    const seen = new Set<string>();
    for (let step = 0; step < 400; step++) {
      const which = pick(['agent', 'tenant', 'caller'] as const);
      const op = mutate(which === 'agent' ? declared : which === 'tenant' ? tenant : scopes, which === 'agent');
      const expected = ToolAllowlist.resolve(declared, { agent: 'bot', tenant, caller: scopes });
      for (const name of names) {
        const result = await r.invoke(name, {}, context());
        const verdict = expected.decide(name);
        const got = result.status === 'ok' ? 'permitted' : (result.decision.layer ?? result.decision.stage);
        const want = verdict.permitted ? 'permitted' : verdict.reason;
        expect(got, `step ${step} (${op} on ${which}) ${name}: ${JSON.stringify(context())}`).toBe(want);
        seen.add(want);
      }
    }
    // The walk reached every kind of verdict.
    expect([...seen].sort()).toEqual(['caller', 'not_declared', 'permitted', 'tenant']);
  });
});

describe('steady layers joined (one look-up for a permitted call)', () => {
  it('the joint of the same three arrays answers as a fresh resolve, through in-place changes, frozen and absent layers, and contexts taking turns', async () => {
    const names = ['search', 'refund', 'sudo', 'fetch_url', 'export', 'delete_user'];
    const { registry: r } = registry(names);
    const random = prng(20261204);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const declared = [...names];
    const plans: (string[] | readonly string[] | null)[] = [
      names.slice(0, 4),
      Object.freeze(names.slice(1)),
      null,
      names.map((n) => n.toUpperCase()),
    ];
    const scopes: (string[] | readonly string[] | null)[] = [names.slice(2), Object.freeze([...names]), null];
    let plan: string[] | readonly string[] | null = plans[0]!;
    let scope: string[] | readonly string[] | null = scopes[0]!;
    const kinds = new Set<string>();
    for (let step = 0; step < 600; step++) {
      const roll = random();
      if (roll < 0.1) plan = pick(plans);
      else if (roll < 0.2) scope = pick(scopes);
      else if (roll < 0.35) {
        // An in-place change of one of the plain arrays in force.
        const layer = pick([plan, scope, declared].filter((l): l is string[] => l !== null && !Object.isFrozen(l)));
        const op = pick(['splice', 'assign', 'push', 'respell', 'reverse']);
        const fresh = layer === declared ? names.filter((n) => !declared.some((d) => d.toLowerCase() === n)) : names;
        if (op === 'splice' && layer.length > 0) layer.splice(Math.floor(random() * layer.length), 1);
        else if (op === 'assign' && layer.length > 0 && fresh.length > 0)
          layer[Math.floor(random() * layer.length)] = pick(fresh);
        else if (op === 'respell' && layer.length > 0) {
          const at = Math.floor(random() * layer.length);
          layer[at] = random() < 0.5 ? layer[at]!.toUpperCase() : layer[at]!.toLowerCase();
        } else if (op === 'reverse') layer.reverse();
        else if (fresh.length > 0) layer.push(pick(fresh));
      }
      const context = (): GateContext => ({
        agent: { name: 'bot', tools: declared },
        ...(plan ? { tenant: { id: 't', tools: plan } } : {}),
        ...(scope ? { caller: { id: 'u', scopes: scope } } : {}),
      });
      const expected = ToolAllowlist.resolve(declared, { agent: 'bot', tenant: plan, caller: scope });
      // Each name twice: the second call meets the layers steady (the joint built, or checked).
      for (const name of [...names, ...names]) {
        const result = await r.invoke(name, {}, context());
        const verdict = expected.decide(name);
        const got = result.status === 'ok' ? 'permitted' : result.decision.layer;
        const want = verdict.permitted ? 'permitted' : verdict.reason;
        expect(got, `step ${step} ${name}: ${JSON.stringify(context())}`).toBe(want);
        kinds.add(want);
      }
    }
    expect([...kinds].sort()).toEqual(['caller', 'not_declared', 'permitted', 'tenant']);
  });
});

describe('joints are built only where they pay', () => {
  it('five plans taking turns in pairs of calls (more than the joints kept) do not rebuild joints; one steady context builds one', async () => {
    const names = Array.from({ length: 200 }, (_, i) => `tool_${i}`);
    const { registry: r } = registry(names);
    const agent = { name: 'bot', tools: [...names] };
    const scopes = [...names];
    const plans = Array.from({ length: 5 }, () => [...names]);
    let turn = 0;
    const rotating = (): GateContext => ({
      agent,
      tenant: { id: 't', tools: plans[(turn++ >> 1) % 5]! },
      caller: { id: 'u', scopes },
    });
    // Every array past its first look (indexed), then counted.
    for (let i = 0; i < 20; i++) expect((await r.invoke(names[i]!, {}, rotating())).status).toBe('ok');
    const before = jointsBuilt();
    for (let i = 0; i < 2000; i++) expect((await r.invoke(names[i % 200]!, {}, rotating())).status).toBe('ok');
    expect(jointsBuilt() - before).toBeLessThanOrEqual(1);
    const steady = (): GateContext => ({ agent, tenant: { id: 't', tools: plans[0]! }, caller: { id: 'u', scopes } });
    const start = jointsBuilt();
    for (let i = 0; i < 3000; i++) expect((await r.invoke(names[i % 200]!, {}, steady())).status).toBe('ok');
    expect(jointsBuilt() - start).toBeLessThanOrEqual(1);
  });
});

describe('a layer array met for the first time is scanned (a plan read per request)', () => {
  it('fresh arrays of any spellings, the call named in any spelling: the verdict of the scan before this change and of a fresh resolve (seeded)', async () => {
    const names = ['search', 'refund', 'sudo', 'fetch_url'];
    const { registry: r } = registry(names);
    const spellings = (n: string): string[] => [n, n.toUpperCase(), n[0]!.toUpperCase() + n.slice(1), fullWidth(n)];
    const spelled = fc.constantFrom(...names).chain((n) => fc.constantFrom(...spellings(n)));
    const layer = fc.option(fc.array(fc.oneof({ weight: 30, arbitrary: spelled }, { weight: 1, arbitrary: fc.constant(7) })), { nil: undefined }); // prettier-ignore
    /** The scan as it was before a name that is its own form was compared once an entry. */
    const scannedBefore = (entries: readonly unknown[], form: string, name: string): boolean => {
      let found = false;
      for (const entry of entries)
        if (entry === form || entry === name) found = true;
        else if (typeof entry !== 'string') throw new ConfigurationError('not a string');
      return found || entries.some((entry) => canonical(entry as string) === form);
    };
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(layer, layer, spelled, async (tenant, scopes, name) => {
        const form = canonical(name);
        const context: GateContext = {
          ...(tenant === undefined ? {} : { tenant: { id: 't', tools: tenant.slice() as string[] } }),
          ...(scopes === undefined ? {} : { caller: { id: 'u', scopes: scopes.slice() as string[] } }),
        };
        let want: string;
        try {
          const inTenant = tenant === undefined || scannedBefore(tenant, form, name);
          const inCaller = scopes === undefined || scannedBefore(scopes, form, name);
          want = !inTenant ? 'tenant' : !inCaller ? 'caller' : 'permitted';
          const resolved = ToolAllowlist.resolve(names, { agent: 'bot', tenant: tenant as string[] | undefined, caller: scopes as string[] | undefined }); // prettier-ignore
          const verdict = resolved.decide(name);
          expect(verdict.permitted ? 'permitted' : verdict.reason).toBe(want);
        } catch (error) {
          if (!(error instanceof ConfigurationError)) throw error;
          want = 'error';
        }
        let got: string;
        try {
          const result = await r.invoke(name, {}, context);
          got = result.status === 'ok' ? 'permitted' : (result.decision.layer ?? result.decision.stage);
        } catch (error) {
          if (!(error instanceof ConfigurationError)) throw error;
          got = 'error';
        }
        expect(got, `${name} under ${JSON.stringify(context)}`).toBe(want);
        seen.add(want);
      }),
      { seed: 20261207, numRuns: 1500 },
    );
    expect([...seen].sort()).toEqual(['caller', 'error', 'permitted', 'tenant']);
  });
});
