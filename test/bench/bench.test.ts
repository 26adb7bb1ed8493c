/**
 * The benchmark's scenario, engines, agreement check, timing harness and chart, at a tiny size, so that
 * `npm run bench` cannot rot between runs. (The timings themselves are not asserted: this is CI.)
 */
import { describe, expect, it } from 'vitest';
import { checkAgreement } from '../../bench/agree.js';
import { chartSvg } from '../../bench/chart.js';
import { cedarPolicies } from '../../bench/engines/cedar.js';
import type { Engine } from '../../bench/engines/engine.js';
import { naiveEngine } from '../../bench/engines/naive.js';
import { benchExtras } from '../../bench/extras.js';
import { measure, percentile, sinkValue } from '../../bench/measure.js';
import { benchPolicyLoad, policyText } from '../../bench/policy-load.js';
import { benchQuickstart, quickstartScenario } from '../../bench/quickstart.js';
import { benchRunner } from '../../bench/runner.js';
import { markdown } from '../../bench/report.js';
import { buildScenario, fullWidth } from '../../bench/scenario.js';
import { benchSize, DisagreementError, ENGINES, loadAndAgree } from '../../bench/suite.js';

const tiny = { budgetMs: 5, minSamples: 3, maxSamples: 20, warmupMs: 5, sampleNs: 20_000 };

describe('bench scenario', () => {
  it('is deterministic and its mix reaches every layer, both rule outcomes and the fallback', async () => {
    const a = buildScenario(10, { calls: 512 });
    const b = buildScenario(10, { calls: 512 });
    expect(a.calls).toEqual(b.calls);
    expect(a.rules).toHaveLength(10);
    expect(a.calls).toHaveLength(512);
    expect(a.calls.some((c) => c.name === fullWidth(c.name.normalize('NFKC')))).toBe(true);
    const { agreement } = await loadAndAgree(a, ['toolgate', 'naive']);
    const mix = agreement.mix;
    for (const count of [mix.notDeclared, mix.tenant, mix.caller, mix.ruleAllow, mix.ruleDeny, mix.fallback])
      expect(count).toBeGreaterThan(0);
    expect(mix.allow + mix.deny).toBe(512);
  });

  it('rounds the mix up to a power of two (the engines mask their index)', () => {
    expect(buildScenario(10, { calls: 100 }).calls).toHaveLength(128);
  });
});

describe('the quick-start scenario', () => {
  it('declares every tool in every layer, one allow rule per tool, calls to registered tools', () => {
    const q = quickstartScenario(20, 64);
    const names = q.tools.map((t) => t.name);
    expect(q.declared).toEqual(names);
    expect(q.tenant).toEqual(names);
    expect(q.rules).toHaveLength(20);
    expect(q.rules.every((r) => r.effect === 'allow' && r.selector.kind === 'name')).toBe(true);
    expect(q.calls.every((c) => names.includes(c.name))).toBe(true);
  });
});

describe('the runner and policy-load parts', () => {
  it('run at a tiny size: every turn one allowed call, every rule loaded', async () => {
    const runner = await benchRunner({ timing: tiny, turns: [2, 5] });
    expect(runner.byTurns.map((t) => t.turns)).toEqual([2, 5]);
    for (const t of runner.byTurns) expect(t.perTurn.p50).toBeGreaterThan(0);
    expect(policyText(3)).toContain('rule_2');
    const load = benchPolicyLoad({ rules: 20, runs: 1 });
    expect(load).toMatchObject({ rules: 20, runs: 1 });
  });
});

describe('agreement', () => {
  it('all four engines agree on every call at small sizes', async () => {
    for (const size of [10, 60]) {
      const scenario = buildScenario(size, { calls: 256, seed: size });
      const { engines, agreement } = await loadAndAgree(scenario, Object.keys(ENGINES) as (keyof typeof ENGINES)[]);
      expect(engines.map((e) => e.engine.name)).toEqual(['toolgate', 'naive', 'casbin', 'cedar']);
      expect(agreement.mismatches).toEqual([]);
      expect(agreement.decisions).toBe(256 * 4);
    }
  });

  it('reports an engine that decides differently, or names another rule', async () => {
    const scenario = buildScenario(20, { calls: 128 });
    const naive = naiveEngine(scenario);
    const flipped: Engine = {
      ...naive,
      explain: (call) => {
        const v = naive.explain(call);
        return call.id === scenario.calls[3]!.id ? { ...v, effect: v.effect === 'allow' ? 'deny' : 'allow' } : v;
      },
    };
    const misnamed: Engine = {
      ...naive,
      explain: (call) => {
        const v = naive.explain(call);
        return v.because[0]!.startsWith('rule:') ? { ...v, because: ['rule:someone_else'] } : v;
      },
    };
    const [reference] = (await loadAndAgree(scenario, ['toolgate'])).engines.map((e) => e.engine);
    expect(checkAgreement(scenario.calls, [reference!, naive]).mismatches).toEqual([]);
    const result = checkAgreement(scenario.calls, [reference!, flipped, misnamed]);
    expect(result.mismatches.length).toBeGreaterThan(1);
    expect(
      result.mismatches.some((m) => m.call.id === scenario.calls[3]!.id && m.got.effect !== m.expected.effect),
    ).toBe(true);
    expect(result.mismatches.some((m) => m.got.because[0] === 'rule:someone_else')).toBe(true);
    expect(() => {
      throw new DisagreementError(20, result.mismatches);
    }).toThrow(/disagree on \d+ decisions at size 20; no time is reported/);
  });

  it('translates a deny rule for Cedar as a forbid that yields to earlier allow rules of the same tools', () => {
    const scenario = buildScenario(60, { calls: 16 });
    const policies = cedarPolicies(scenario);
    expect(Object.keys(policies)).toHaveLength(60 + 3);
    expect(policies['layer:tenant']).toContain('forbid');
    const yielding = Object.entries(policies).filter(
      ([id, text]) => id.startsWith('rule:') && text.startsWith('forbid') && text.includes(' unless { '),
    );
    expect(yielding.length).toBeGreaterThan(0);
    for (const [id] of yielding) expect(scenario.rules.find((r) => `rule:${r.id}` === id)?.effect).toBe('deny');
  });
});

describe('timing harness', () => {
  it('times batches and keeps every result in the sink', () => {
    const before = sinkValue();
    const timing = measure((_from, count) => {
      let x = 0;
      for (let i = 0; i < count; i++) x += Math.sqrt(i);
      return x > 0 ? count : 0;
    }, tiny);
    expect(timing.samples).toBeGreaterThanOrEqual(3);
    expect(timing.p50).toBeGreaterThan(0);
    expect(timing.p99).toBeGreaterThanOrEqual(timing.p50);
    expect(sinkValue()).toBeGreaterThan(before);
    expect(percentile([1, 2, 3, 4], 0.5)).toBe(2);
    expect(percentile([1, 2, 3, 4], 0.99)).toBe(4);
  });

  it('runs one size end to end and draws the chart', async () => {
    const result = await benchSize(10, { calls: 64, timing: tiny });
    expect(result.timings.map((t) => t.engine)).toEqual(['toolgate', 'naive', 'casbin', 'cedar']);
    for (const t of result.timings) expect(t.p50).toBeGreaterThan(0);
    const svg = await chartSvg([
      ...result.timings,
      ...result.timings.map((t) => ({ ...t, size: 100, p50: t.p50 * 2, p99: t.p99 * 2 })),
    ]);
    expect(svg.startsWith('<svg')).toBe(true);
    for (const label of [
      'toolgate',
      'naive baseline',
      'casbin (priority model)',
      'cedar-wasm (stateful)',
      '1 µs target',
    ])
      expect(svg).toContain(label);
  });

  it('measures the extras at a tiny size and reports them as Markdown', async () => {
    const extras = await benchExtras({ timing: tiny, resolveNames: 2000, uniqueNames: 20_000, dispatchSize: 20 });
    const size = await benchSize(10, { calls: 32, timing: tiny });
    const text = markdown({
      generated: new Date().toISOString(),
      node: process.version,
      cpu: 'test',
      loadAverage: { start: [0, 0, 0], end: [0, 0, 0] },
      repeat: 1,
      timings: size.timings.map((t) => ({ ...t, spread: { p50: [t.p50] } })),
      extras,
      targets: [{ description: 'a target', target: '< 1', measured: '2', met: false }],
    });
    expect(text).toMatch(/^\| tools & rules \| toolgate p50/);
    const quickstart = [await benchQuickstart(10, { timing: tiny, calls: 64 })];
    const withQuick = markdown({
      generated: new Date().toISOString(),
      node: process.version,
      cpu: 'test',
      loadAverage: { start: [0, 0, 0], end: [0, 0, 0] },
      repeat: 1,
      quickstart,
      timings: size.timings.map((t) => ({ ...t, spread: { p50: [t.p50] } })),
      extras,
      targets: [],
    });
    expect(withQuick).toMatch(/^\| tools & rules \| `invoke` p50/);
    expect(withQuick).toContain('| 10 | ');
    for (const key of ['invoke', 'plan50', 'execute', 'casbin', 'cedar'] as const)
      expect(quickstart[0]![key].p50).toBeGreaterThan(0);
    expect(text).toContain('| 10 | ');
    expect(text).toContain('| a target: < 1 | 2 | **no** |');
    expect(extras.check.p50).toBeGreaterThan(0);
    expect(extras.resolve.names).toBe(2000);
    expect(extras.canonicalCache.maxSize).toBeLessThanOrEqual(extras.canonicalCache.limit);
    expect(extras.canonicalCache.maxSize).toBeGreaterThan(extras.canonicalCache.limit / 4);
    expect(extras.dispatch.single.p50).toBeGreaterThan(0);
    expect(extras.dispatch.asyncSingle.p50).toBeGreaterThan(0);
  });
});
