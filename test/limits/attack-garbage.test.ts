/**
 * A Limiter (the registry takes any object with a `charge`) whose verdict is not one — a string, `{ allowed:
 * 'yes' }`, `{ allowed: false }` without a stage or reason — refuses the call (fail closed) with a Decision of
 * a real stage (`limit` or `store`) and a reason the model can read, never a Decision with no stage.
 */
import { describe, expect, it } from 'vitest';
import type { Limiter } from '../../src/limits/limiter.js';
import { prng } from '../../bench/scenario.js';
import { shop } from '../runner/fixtures.js';

const alice = { tenant: { id: 'acme' }, caller: { id: 'alice' } };

describe('a Limiter that answers garbage', () => {
  for (const garbage of ['allowed', 0, false, { allowed: 'yes' }, { allowed: false }, { allowed: 1 }, []])
    it(`charge resolving to ${JSON.stringify(garbage)}: refused at stage limit or store, with a reason`, async () => {
      const { registry, refunds } = shop();
      registry.setLimiter({ charge: () => Promise.resolve(garbage) } as unknown as Limiter);
      const result = await registry.invoke('refund', { order: 'A1', amount: 10 }, alice);
      expect(result.status).toBe('refused');
      expect(refunds).toHaveLength(0);
      expect(['limit', 'store']).toContain(result.decision.stage);
      expect(result.decision.reason).toEqual(expect.stringMatching(/\S/));
    });
});

describe('a Limiter that answers verdicts', () => {
  it('decides as before on random well-formed verdicts (allowed: null; refused: its stage and reason)', async () => {
    const { limiterMeter } = await import('../../src/limits/charge.js');
    const rand = prng(7);
    for (let i = 0; i < 300; i++) {
      const verdict =
        rand() < 0.4
          ? { allowed: true, charged: [] }
          : rand() < 0.5
            ? { allowed: false, stage: 'limit', limit: 'l', counter: null, retryAfterMs: null, reason: `r${i}` }
            : { allowed: false, stage: 'store', store: 's', counter: null, retryAfterMs: null, reason: `s${i}` };
      const meter = limiterMeter({ charge: () => Promise.resolve(verdict) } as unknown as Limiter);
      const attempt = {
        decision: { tenant: null, agent: 'a', runId: null, canonical: 'refund' },
        tool: null,
        context: {},
      };
      const before = verdict.allowed ? null : { stage: verdict.stage, reason: verdict.reason };
      expect(await meter.charge(attempt as never)).toEqual(before);
    }
  });
});
