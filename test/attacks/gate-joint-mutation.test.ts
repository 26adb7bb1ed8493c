/**
 * Attack (issue 25, the allowlist joint's slot objects): one context object whose three plain layer arrays
 * (declaration, tenant plan, caller scopes) are changed IN PLACE between calls — splice, pop, reverse, length 0,
 * an entry swapped for another spelling (case, NFKC, `__proto__`/`constructor`/`toString`), duplicates — must be
 * decided call by call exactly as a fresh resolve of the layers as they are now. A stale slot that still answers
 * "allowed" after a layer dropped the tool runs a refused call.
 */
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import { ToolAllowlist } from '../../src/allowlist.js';
import { jointsBuilt } from '../../src/allowlist-cache.js';
import { canonical } from '../../src/names.js';
import { ToolRegistry } from '../../src/index.js';

const NAMES = ['search', 'refund', 'sudo', '__proto__', 'constructor', 'toString', 'read_file', 'write_file'];
// Other spellings of the same canonical forms (case, a full-width letter that NFKC folds) and a stranger.
const SPELLINGS = [...NAMES, 'SEARCH', 'Refund', 'ｓｕｄｏ', 'TOSTRING', 'delete_all'];

describe('attack: layers changed in place under a steady context', () => {
  it('decides every call as a fresh resolve of the layers as they are now', async () => {
    const built = jointsBuilt();
    for (let seed = 1; seed <= 12; seed++) {
      const rand = prng(seed);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
      const ran: string[] = [];
      const registry = new ToolRegistry({ confusables: 'off' });
      for (const name of [...NAMES, 'delete_all'])
        registry.register({ name, parameters: { type: 'object' }, execute: () => void ran.push(name) });
      const declared = [...NAMES];
      const tenant = [...NAMES];
      const scopes = [...NAMES];
      const context = { agent: { name: 'a', tools: declared }, tenant: { id: 't', tools: tenant }, caller: { scopes } };
      for (let step = 0; step < 400; step++) {
        // Mostly steady calls (the joint is built and answers), now and then a change in place.
        if (rand() < 0.15) {
          const layer = pick([declared, tenant, scopes]);
          const r = rand();
          if (r < 0.2) layer.splice(Math.floor(rand() * (layer.length + 1)), 1);
          else if (r < 0.3) layer.pop();
          else if (r < 0.4) layer.reverse();
          else if (r < 0.45) layer.length = 0;
          else if (layer === declared) {
            // A declaration must not collide: only a name it lacks (in any spelling) goes in.
            const absent = NAMES.filter((n) => !declared.some((d) => canonical(d) === n));
            if (absent.length > 0) declared.splice(Math.floor(rand() * (declared.length + 1)), 0, pick(absent));
          } else if (r < 0.75 && layer.length > 0) layer[Math.floor(rand() * layer.length)] = pick(SPELLINGS);
          else layer.push(pick(SPELLINGS));
        }
        const name = pick(SPELLINGS);
        const expected = ToolAllowlist.resolve([...declared], {
          tenant: [...tenant],
          caller: [...scopes],
          agent: 'a',
        }).permits(name);
        const before = ran.length;
        const result = await registry.invoke(name, {}, context);
        const where = `seed ${seed} step ${step} ${name} d=${JSON.stringify(declared)} t=${JSON.stringify(tenant)} c=${JSON.stringify(scopes)}`;
        expect(result.status === 'ok', where).toBe(expected);
        expect(ran.length - before, where).toBe(expected ? 1 : 0);
      }
    }
    // The steady stretches were answered by joints (the code under attack), not only by the per-layer path.
    expect(jointsBuilt() - built).toBeGreaterThan(5);
  });
});
