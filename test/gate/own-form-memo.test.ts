/**
 * The joint slot's `own` (src/allowlist-cache.ts, src/gate/precheck.ts `ownFormOf`): a call's name found spelled as its
 * tool's canonical name is known so from the slot, without comparing the strings per call, only for a frozen tool
 * whose `canonicalName` is a data property. Under steady layers (joined: the slot answers) every call is decided, run
 * and read as the same call under fresh copies of the layers (never joined: the name compared per call, as before):
 * tools of defineTool's, tools of the caller's making (frozen, not frozen, `canonicalName` a getter that counts its
 * reads and may answer another spelling), names in other spellings and unknown names, seeded.
 */
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import { jointsBuilt } from '../../src/allowlist-cache.js';
import { defineTool, PermissionPolicy, ToolRegistry, type Tool } from '../../src/index.js';
import { steadyContexts } from './fixtures/steady-contexts.js';

const NAMES = ['search', 'refund', 'notes', 'crm:read'];
const CALLED = [...NAMES, 'Search', 'REFUND', 'ｎｏｔｅｓ', 'CRM:Read', 'nope'];

function comparable(result: unknown): unknown {
  return JSON.parse(
    JSON.stringify(result, (key, value: unknown) =>
      key === 'callId' || key === 'durationMs' || key === 'policyVersion' ? '·' : value,
    ),
  ) as unknown;
}

/** A tool of the caller's making: defineTool's fields, frozen or not, its canonical name a data property or a getter. */
function ownTool(name: string, kind: number, reads: { count: number; armed: boolean }, random: () => number): Tool {
  const base = defineTool({ name, parameters: { type: 'object' }, execute: async () => `${name}:${kind}` });
  if (kind === 0) return base;
  const copy: Record<string, unknown> = { ...base };
  if (kind === 3) {
    delete copy['canonicalName'];
    Object.defineProperty(copy, 'canonicalName', {
      enumerable: true,
      get() {
        if (!reads.armed) return name;
        reads.count++;
        // Now and then another spelling of it while calls run: the name is compared every time, as before.
        return random() < 0.2 ? name.toUpperCase() : name;
      },
    });
  }
  return (kind === 1 ? copy : Object.freeze(copy)) as unknown as Tool;
}

async function run(seed: number, steady: boolean): Promise<{ trace: unknown[]; reads: number }> {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const reads = { count: 0, armed: false };
  const registry = new ToolRegistry();
  for (const name of NAMES) registry.register(ownTool(name, Math.floor(random() * 4), reads, random));
  registry.setPermissionPolicy(new PermissionPolicy({ rules: [{ name: 'all', tools: NAMES, result: 'allow' }] }));
  const contextOf = steadyContexts(NAMES, steady);
  const trace: unknown[] = [];
  for (let i = 0; i < 300; i++) {
    const context = contextOf();
    if (random() < 0.05) {
      // A tool replaced by another kind between calls: the slot's memo is made again for it.
      const name = pick(NAMES);
      reads.armed = false;
      registry.unregister(name);
      registry.register(ownTool(name, Math.floor(random() * 4), reads, random));
    }
    reads.armed = true;
    trace.push(comparable(await registry.invoke(pick(CALLED), {}, context)));
  }
  return { trace, reads: reads.count };
}

describe("the joint slot's own form", () => {
  it('decides, runs and reads every call under steady layers as under fresh copies of them (seeded)', async () => {
    for (let seed = 1; seed <= 12; seed++) {
      const before = jointsBuilt();
      const steady = await run(20261206 + seed, true);
      expect(jointsBuilt()).toBeGreaterThan(before);
      const fresh = await run(20261206 + seed, false);
      expect(steady.trace).toEqual(fresh.trace);
      expect(steady.reads).toBe(fresh.reads);
    }
  });
});
