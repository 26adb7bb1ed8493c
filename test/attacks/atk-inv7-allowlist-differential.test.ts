/**
 * inv7's allowlist step (src/allowlist-cache.ts: the first joint taken directly when its layers are the call's) against
 * the step before it (fixtures/allowlist-cache-before-inv7.ts, 0b0ab6b^1), on random calls: agents sharing one
 * declaration array, frozen and plain layers, plain ones changed in place between bursts (same array, other
 * contents), names in other cases and a full-width spelling. Both must refuse with the same layer (or throw the same).
 */
import { describe, expect, it } from 'vitest';
import * as after from '../../src/allowlist-cache.js';
import { canonical } from '../../src/names.js';
import type { GateContext, GateEnvironment } from '../../src/contracts/gate.js';
import * as before from './fixtures/allowlist-cache-before-inv7.js';

const NAMES = ['read', 'write', 'Read', 'READ', 'read_file', 'Read_File', 'del', 'ls', 'exec', 'ｒｅａｄ', 'grep'];

function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

const sameForm = (a: string, b: string): boolean => canonical(a) === canonical(b);

/** The refusals (or errors) of a random sequence of calls. */
function refusals(refusal: typeof after.allowlistRefusal, seed: number): string[] {
  const r = random(seed);
  const pick = <T>(from: readonly T[]): T => from[Math.floor(r() * from.length)]!;
  const subset = (): string[] => {
    const out: string[] = [];
    for (const name of NAMES) if (r() < 0.5 && !out.some((o) => sameForm(o, name))) out.push(name);
    return out;
  };
  const registered = Object.freeze(['read', 'write', 'read_file', 'del', 'ls', 'exec', 'grep']);
  const env = { registeredNames: () => registered } as unknown as GateEnvironment;
  const layers: (string[] | readonly string[])[] = [];
  for (let i = 0; i < 6; i++) {
    const layer = subset();
    layers.push(r() < 0.3 ? Object.freeze(layer) : layer);
  }
  const agents = [
    { name: 'a', tools: layers[0] },
    { name: 'b', tools: layers[0] },
    { name: 'c', tools: layers[1] },
    { name: 'd' },
  ];
  const log: string[] = [];
  for (let step = 0; step < 3000; step++) {
    if (r() < 0.08) {
      const layer = pick(layers);
      if (Object.isFrozen(layer)) continue;
      const plain = layer as string[];
      const how = r();
      if (how < 0.3 && plain.length > 0) plain.splice(Math.floor(r() * plain.length), 1);
      else if (how < 0.6) {
        const name = pick(NAMES);
        if (!plain.some((o) => sameForm(o, name))) plain.push(name);
      } else if (plain.length > 0) {
        const at = Math.floor(r() * plain.length);
        const name = pick(NAMES);
        if (!plain.some((o, k) => k !== at && sameForm(o, name))) plain[at] = name;
      }
      log.push('changed');
      continue;
    }
    const agent = pick(agents);
    const tenant = r() < 0.2 ? undefined : pick(layers.slice(2));
    const caller = r() < 0.3 ? undefined : pick(layers.slice(2));
    const context = {
      agent,
      tenant: tenant && { tools: tenant },
      caller: caller && { scopes: caller },
    } as unknown as GateContext;
    const burst = 1 + Math.floor(r() * 40);
    for (let b = 0; b < burst; b++) {
      const name = pick(NAMES);
      try {
        log.push(String(refusal(context, env, canonical(name), name, agent.name)));
      } catch (error) {
        log.push(`throws ${(error as Error).message}`);
      }
    }
  }
  return log;
}

describe('inv7 allowlist step against the step before', () => {
  for (let seed = 1; seed <= 30; seed++) {
    it(`seed ${seed}: the same refusals`, () => {
      const built = after.jointsBuilt();
      expect(refusals(after.allowlistRefusal, seed)).toEqual(
        refusals(before.allowlistRefusal as typeof after.allowlistRefusal, seed),
      );
      expect(after.jointsBuilt()).toBeGreaterThan(built);
    });
  }
});
