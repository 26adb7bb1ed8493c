/**
 * The core changes the benchmark led to (issue 6): each keeps the behaviour it replaced.
 */
import { describe, expect, it } from 'vitest';
import { allow, deny } from '../../src/gate/precheck.js';
import { defineTool, PermissionPolicy, ToolRegistry } from '../../src/index.js';
import type { DecisionBase } from '../../src/decision.js';
import { CANONICAL_CACHE_LIMIT, canonical, canonicalCacheSize } from '../../src/names.js';

const base: DecisionBase = {
  callId: 'c1',
  tool: 'Search',
  canonical: 'search',
  agent: 'concierge',
  tenant: 'acme',
  runId: null,
  parameters: { q: 'x' },
  rule: 'r1',
  reason: 'old reason',
  asked: null,
  policyVersion: 'v1',
};

describe('decisions built field by field', () => {
  it('deny and allow carry the base, their parts and the reason, frozen', () => {
    const parts = { stage: 'policy', by: 'rule', layer: null } as const;
    const d = deny(base, parts, 'new reason');
    expect(d).toEqual({ ...base, ...parts, effect: 'deny', reason: 'new reason' });
    expect(Object.isFrozen(d)).toBe(true);
    const a = allow(base, 'rule', 'ok');
    expect(a).toEqual({ ...base, effect: 'allow', stage: 'policy', by: 'rule', layer: null, reason: 'ok' });
    expect(Object.isFrozen(a)).toBe(true);
  });

  it('every Decision has one shape: the same keys in the same order, allow or deny', () => {
    const d = deny(base, { stage: 'allowlist', by: 'allowlist', layer: 'tenant' }, 'no');
    const a = allow(base, 'no_policy', 'yes');
    expect(Object.keys(d)).toEqual(Object.keys(a));
  });

  it('an allow by a rule carries the rule and its reason', async () => {
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 'search', parameters: { type: 'object' }, execute: () => 'ok' }));
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [{ name: 'allow_search', tools: ['search'], result: 'allow', reason: 'searching is fine' }],
      }),
    );
    const d = await registry.decide({ name: 'Search', arguments: {} });
    expect(d).toMatchObject({
      effect: 'allow',
      by: 'rule',
      rule: 'allow_search',
      reason: 'searching is fine',
      canonical: 'search',
      tool: 'Search',
    });
  });
});

describe('the canonical cache', () => {
  it('stays within its limit under endless unique names', () => {
    let max = 0;
    for (let i = 0; i < 100_000; i++) {
      canonical(`Unique:${i}`);
      if (i % 97 === 0) max = Math.max(max, canonicalCacheSize());
    }
    expect(max).toBeLessThanOrEqual(CANONICAL_CACHE_LIMIT);
    expect(canonicalCacheSize()).toBeLessThanOrEqual(CANONICAL_CACHE_LIMIT);
    expect(canonicalCacheSize()).toBeGreaterThan(CANONICAL_CACHE_LIMIT / 2);
  });

  it('keeps a name in use while unique names stream past', () => {
    for (let i = 0; i < 50_000; i++) {
      canonical(`Stream:${i}`);
      if (i % 1000 === 0) expect(canonical('ＫＥＰＴ')).toBe('kept');
    }
    expect(canonical('ＫＥＰＴ')).toBe('kept');
    expect(canonical('Straße')).toBe(canonical('STRASSE'));
  });
});

describe('runAllowed', () => {
  it('gives a tool that reads signal after its timeout an aborted signal, and times out async tools', async () => {
    let seen: AbortSignal | undefined;
    const registry = new ToolRegistry({ toolTimeoutMs: 20 });
    registry.register(
      defineTool({
        name: 'slow',
        parameters: { type: 'object' },
        execute: async (_args, execution) => {
          await new Promise((r) => setTimeout(r, 60));
          seen = execution.signal;
          return 'late';
        },
      }),
    );
    const [result] = await registry.dispatch([{ name: 'slow', arguments: {} }]);
    expect(result).toMatchObject({ status: 'error', isError: true });
    expect(result!.content).toContain('did not finish within 20 ms');
    await new Promise((r) => setTimeout(r, 80));
    expect(seen?.aborted).toBe(true);
    expect(String((seen?.reason as Error).message)).toContain('did not finish within 20 ms');
  });

  it('aborts the signal a tool holds when the dispatch is cancelled', async () => {
    const outer = new AbortController();
    let signal: AbortSignal | undefined;
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'wait',
        parameters: { type: 'object' },
        execute: (_args, execution) => {
          signal = execution.signal;
          return new Promise((resolve) => execution.signal.addEventListener('abort', () => resolve('stopped')));
        },
      }),
    );
    const pending = registry.dispatch([{ name: 'wait', arguments: {} }], { signal: outer.signal });
    await new Promise((r) => setTimeout(r, 5));
    outer.abort(new Error('user cancelled'));
    const [result] = await pending;
    expect(signal?.aborted).toBe(true);
    expect(result).toMatchObject({ status: 'ok', content: 'stopped' });
  });

  it('returns a synchronous tool value and reports a synchronous throw as an error result', async () => {
    const registry = new ToolRegistry({ toolTimeoutMs: 1 });
    registry.register(defineTool({ name: 'now', parameters: { type: 'object' }, execute: () => ({ n: 1 }) }));
    registry.register(
      defineTool({
        name: 'boom',
        parameters: { type: 'object' },
        execute: () => {
          throw new Error('bang');
        },
      }),
    );
    const [ok, bad] = await registry.dispatch([
      { name: 'now', arguments: {} },
      { name: 'boom', arguments: {} },
    ]);
    expect(ok).toMatchObject({ status: 'ok', content: '{"n":1}', value: { n: 1 } });
    expect(bad).toMatchObject({ status: 'error', isError: true });
    expect(bad!.content).toContain('bang');
  });

  it('emits each tool_decided right before its call runs or is refused, in call order (the one phase-2 order)', async () => {
    const events: string[] = [];
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 'a', parameters: { type: 'object' }, execute: () => events.push('ran a') }));
    registry.register(defineTool({ name: 'b', parameters: { type: 'object' }, execute: () => events.push('ran b') }));
    registry.onChange((e) => {
      if (e.type === 'tool_decided') events.push(`decided ${e.decision.tool} ${e.decision.effect}`);
    });
    await registry.executeToolCalls([
      { name: 'a', arguments: {} },
      { name: 'nope', arguments: {} },
      { name: 'b', arguments: {} },
    ]);
    expect(events).toEqual(['decided a allow', 'ran a', 'decided nope deny', 'decided b allow', 'ran b']);
  });
});
