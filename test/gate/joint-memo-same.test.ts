/**
 * What a joint slot keeps for its form (issue 25: the tool the registry found under it and the policy's outcome
 * for that tool, src/gate/precheck.ts) decides as the look-ups it saves: on seeded random registries, policies and
 * steady layer arrays, with tools registered, replaced and unregistered, policies set and removed, layers changed
 * in place and a second registry taking turns on the same layers, every call under the steady arrays (where the
 * joint answers) gets the Decision and result of the same call under fresh copies of them (never joined, nothing
 * kept): the same tool ran, by the same rule.
 */
import { describe, expect, it } from 'vitest';
import { jointsBuilt } from '../../src/allowlist-cache.js';
import { defineTool, PermissionPolicy, ToolRegistry, type GateContext } from '../../src/index.js';
import { prng } from '../../bench/scenario.js';

const TOOLS = ['search', 'refund', 'delete_all', 'crm:read', 'notes'];
const NAMES = [...TOOLS, 'Search', 'REFUND', 'ｓｅａｒｃｈ', 'nope'];

/** A result without what differs by construction (the generated call id). */
function comparable(result: unknown): unknown {
  return JSON.parse(JSON.stringify(result, (key, value: unknown) => (key === 'callId' || key === 'id' ? '·' : value)));
}

function toolOf(name: string, version: number, random: () => number) {
  return defineTool({
    name,
    parameters:
      random() < 0.5 ? { type: 'object', properties: { amount: { type: 'integer', minimum: 0 } } } : { type: 'object' },
    metadata: { tags: random() < 0.3 ? ['destructive'] : [] },
    // What ran says which tool object it was.
    execute: random() < 0.5 ? async () => `${name} v${version}` : () => `${name} v${version}`,
  });
}

function policyOf(random: () => number, version: number): PermissionPolicy {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const rules = Array.from({ length: Math.floor(random() * 5) }, (_, i) => {
    const above = random() < 0.3 ? Math.floor(random() * 3) : undefined;
    return {
      name: `r${i}`,
      result: pick(['allow', 'allow', 'deny'] as const),
      ...(random() < 0.3
        ? { tags: ['destructive'] }
        : { tools: TOOLS.filter(() => random() < 0.4).concat(pick(TOOLS)) }),
      ...(above === undefined
        ? {}
        : { match: (_t: unknown, p: Readonly<Record<string, unknown>>) => Number(p['amount']) > above }),
    };
  });
  return new PermissionPolicy({ rules, fallback: pick(['allow', 'deny'] as const), version: `p${version}` });
}

async function scenario(seed: number): Promise<number> {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  let version = 0;
  const registries = [new ToolRegistry(), new ToolRegistry()];
  for (const registry of registries) {
    for (const name of TOOLS) if (random() < 0.85) registry.register(toolOf(name, version++, random));
    if (random() < 0.9) registry.setPermissionPolicy(policyOf(random, version++));
  }
  // The steady layers (a server's arrays, held for good), one spelling per form.
  const layer = (): string[] | undefined =>
    random() < 0.2
      ? undefined
      : TOOLS.filter(() => random() < 0.85).map((name) => (random() < 0.2 ? name.toUpperCase() : name));
  const declared = layer();
  const tenant = layer();
  const caller = layer();
  const contextOf = (d: string[] | undefined, t: string[] | undefined, c: string[] | undefined): GateContext => ({
    agent: d ? { name: 'agent', tools: d } : 'agent',
    ...(t ? { tenant: { id: 'acme', tools: t } } : {}),
    ...(c ? { caller: { id: 'user', scopes: c } } : {}),
  });
  const copy = (items: string[] | undefined): string[] | undefined => (items ? [...items] : undefined);
  let calls = 0;
  for (let step = 0; step < 160; step++) {
    const registry = random() < 0.8 ? registries[0]! : registries[1]!;
    const op = random();
    if (op < 0.04) {
      const free = [...TOOLS, 'notes_2'].filter((name) => !registry.has(name));
      if (free.length > 0) registry.register(toolOf(pick(free), version++, random));
    } else if (op < 0.08) {
      registry.unregister(pick(TOOLS));
    } else if (op < 0.11) {
      // Replaced: another tool object under the same name.
      const name = pick(TOOLS);
      registry.unregister(name);
      registry.register(toolOf(name, version++, random));
    } else if (op < 0.14) {
      if (random() < 0.8) registry.setPermissionPolicy(policyOf(random, version++));
      else registry.removePermissionPolicy();
    } else if (op < 0.16) {
      // A layer changed in place: a plan downgraded or upgraded.
      const target = pick([declared, tenant, caller]);
      if (target && target.length > 0 && random() < 0.5) target.splice(Math.floor(random() * target.length), 1);
      else if (target) {
        const missing = TOOLS.filter((name) => !target.some((entry) => entry.toLowerCase() === name));
        if (missing.length > 0) target.push(pick(missing));
      }
    } else {
      const name = pick(NAMES);
      const given = random() < 0.8 ? { amount: Math.floor(random() * 5) - 1 } : '{"amount":2}';
      // Twice under the steady arrays (the same layers twice in a row are what gets them joined), then fresh copies.
      const kept = await registry.invoke(name, given, contextOf(declared, tenant, caller));
      const again = await registry.invoke(name, given, contextOf(declared, tenant, caller));
      const fresh = await registry.invoke(name, given, contextOf(copy(declared), copy(tenant), copy(caller)));
      expect({ seed, step, result: comparable(kept) }).toEqual({ seed, step, result: comparable(fresh) });
      expect({ seed, step, result: comparable(again) }).toEqual({ seed, step, result: comparable(fresh) });
      calls++;
    }
  }
  return calls;
}

describe("a joint slot's memo decides as the look-ups it saves (issue 25)", () => {
  it('on seeded random registries, policies and steady layers changed along the way: the same Decisions and results', async () => {
    const built = jointsBuilt();
    let calls = 0;
    for (let seed = 1; seed <= 300; seed++) calls += await scenario(seed);
    expect(calls).toBeGreaterThan(30_000);
    // The steady arrays were joined (the memo was used), again and again as the layers changed.
    expect(jointsBuilt() - built).toBeGreaterThan(100);
  });
});
