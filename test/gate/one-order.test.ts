/**
 * The one phase-2 order (stale? → re-judge → meter → announce → confirm → execute) on every route, and its
 * one named fast path: what a caller can observe of them.
 */
import { describe, expect, it } from 'vitest';
import { PermissionPolicy, ToolRegistry, type RegistryEvent } from '../../src/index.js';
import { Limiter } from '../../src/limits/limiter.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';

function setUp(limiter = false) {
  const ran: string[] = [];
  const registry = new ToolRegistry({
    confusables: 'off',
    limiter: limiter
      ? new Limiter({ counters: new MemoryCounterStore(), limits: [{ name: 'all', max: 100, window: '1h' }] })
      : null,
  });
  for (const name of ['a', 'b', 'c'])
    registry.register({
      name,
      parameters: { type: 'object' },
      execute: () => {
        ran.push(name);
        return `${name} ok`;
      },
    });
  registry.setPermissionPolicy(
    new PermissionPolicy({
      rules: [{ name: 'no-c', tools: ['c'], result: 'deny', reason: 'c is off' }],
      fallback: 'allow',
    }),
  );
  return { registry, ran };
}

describe('the fast path: one call, no listener, no meter', () => {
  it('decides and starts the tool within the invoke call, before any microtask', () => {
    const { registry, ran } = setUp();
    const pending = registry.invoke('a', {});
    // Nothing was awaited yet: a synchronous schema and no handler decide without a microtask.
    expect(ran).toEqual(['a']);
    return expect(pending).resolves.toMatchObject({ status: 'ok', content: 'a ok' });
  });

  it('a refusal on the fast path is a refused result, and nothing runs', async () => {
    const { registry, ran } = setUp();
    const result = await registry.invoke('c', {});
    expect(result).toMatchObject({ status: 'refused', decision: { effect: 'deny', rule: 'no-c' } });
    expect(ran).toEqual([]);
  });

  it('with a listener the call takes the one order and is announced before it runs', async () => {
    const { registry, ran } = setUp();
    const seen: string[] = [];
    registry.onChange((e) => seen.push(e.type === 'tool_decided' ? `decided:${ran.length}` : e.type));
    await registry.invoke('a', {});
    expect(seen).toEqual(['decided:0', 'tool_executed']);
  });
});

describe('a batch is announced call by call, with or without a meter', () => {
  for (const limiter of [false, true])
    it(`each Decision right before its call runs or is refused (limiter: ${limiter})`, async () => {
      const { registry } = setUp(limiter);
      const events: string[] = [];
      registry.onChange((e: RegistryEvent) => {
        if (e.type === 'tool_decided') events.push(`decided ${e.decision.tool}:${e.decision.effect}`);
        if (e.type === 'tool_executed') events.push(`ran ${e.tool}`);
      });
      await registry.dispatch([
        { id: '1', name: 'a', arguments: {} },
        { id: '2', name: 'c', arguments: {} },
        { id: '3', name: 'b', arguments: {} },
      ]);
      expect(events).toEqual(['decided a:allow', 'ran a', 'decided c:deny', 'decided b:allow', 'ran b']);
    });

  it('a call judged again after a wait is announced once, with the Decision it runs under', async () => {
    const { registry } = setUp();
    const decided: string[] = [];
    registry.onChange((e) => {
      if (e.type === 'tool_decided') decided.push(`${e.decision.callId}:${e.decision.policyVersion}`);
      // Something unrelated changes the registry while a runs: b is decided again before it runs.
      if (e.type === 'tool_executed' && e.tool === 'a')
        registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'allow', version: 'v2' }));
    });
    await registry.dispatch([
      { id: '1', name: 'a', arguments: {} },
      { id: '2', name: 'b', arguments: {} },
    ]);
    expect(decided.filter((d) => d.startsWith('2:'))).toEqual(['2:v2']);
  });
});
