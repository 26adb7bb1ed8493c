import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { previewDecision, explainCall, loadPolicyFile } from '../../src/policy-file/index.js';

const set = await loadPolicyFile(join(import.meta.dirname, 'fixtures', 'concierge.yaml'));

describe('explainCall', () => {
  it('shows the rule that refused a path traversal, and why the allow rule did not hold', async () => {
    const e = await explainCall(
      set,
      { name: 'Read_File', arguments: { path: '/data/../etc/passwd' } },
      { agent: 'concierge', tenant: 'acme', scopes: ['files:read'] },
    );
    expect(e.canonical).toBe('read_file');
    expect(e.decision).toMatchObject({
      effect: 'deny',
      stage: 'policy',
      by: 'rule',
      rule: 'deny_other_reads',
      reason: 'Files outside /data are off limits',
    });
    const byName = new Map(e.rules.map((r) => [r.rule, r]));
    expect(byName.get('deny_privileged')).toMatchObject({ outcome: 'not_selected' });
    expect(byName.get('deny_privileged')!.detail).toMatch(/carries none of the tags "privileged"/);
    const allow = byName.get('read_data_only')!;
    expect(allow.outcome).toBe('not_matched');
    expect(allow.conditions).toEqual([
      expect.objectContaining({
        arg: 'path',
        op: 'path',
        outcome: 'failed',
        detail: 'path is a path within /data/**: "/data/../etc/passwd" resolves to "/etc/passwd", does not hold',
      }),
    ]);
    expect(byName.get('deny_other_reads')).toMatchObject({ outcome: 'matched', line: 57 });
    expect(byName.get('github_reads')!.outcome).toBe('not_reached');
    expect(e.layers.map((l) => [l.layer, l.permits])).toEqual([
      ['agent', true],
      ['tenant', true],
      ['caller', true],
    ]);
  });

  it('shows an unjudgeable path as the rule that failed, denying the call', async () => {
    const e = await explainCall(set, { name: 'read_file', arguments: { path: '/data/../../etc/passwd' } });
    expect(e.decision).toMatchObject({ effect: 'deny', by: 'rule_error', rule: 'read_data_only' });
    const rule = e.rules.find((r) => r.rule === 'read_data_only')!;
    expect(rule.outcome).toBe('threw');
    expect(rule.conditions[0]).toMatchObject({ outcome: 'unjudgeable' });
    expect(rule.conditions[0]!.detail).toMatch(/climbs above the root/);
  });

  it('names the layer that refused, and scopes the file does not map', async () => {
    const tenant = await explainCall(
      set,
      { name: 'write_file', arguments: {} },
      { agent: 'concierge', tenant: 'acme' },
    );
    expect(tenant.decision).toMatchObject({ effect: 'deny', stage: 'allowlist', layer: 'tenant' });
    expect(tenant.rules).toEqual([]);
    expect(tenant.layers[1]).toMatchObject({ layer: 'tenant', permits: false });
    const caller = await explainCall(
      set,
      { name: 'refund', arguments: { amount: 5 } },
      { agent: 'concierge', scopes: ['files:read', 'admin'] },
    );
    expect(caller.decision.layer).toBe('caller');
    expect(caller.layers[2]!.detail).toMatch(/scope "admin" is not in the file's scope map and covers nothing/);
    const agent = await explainCall(set, { name: 'github:delete_repo', arguments: {} }, { agent: 'concierge' });
    expect(agent.decision.layer).toBe('not_declared');
  });

  it('reports ask without asking anyone, and says who would decide', async () => {
    const e = await explainCall(
      set,
      { type: 'tool_use', id: 'toolu_1', name: 'refund', input: { amount: 500 } },
      { agent: 'concierge' },
    );
    expect(e.format).toBe('anthropic');
    expect(e.callId).toBe('toolu_1');
    expect(e.decision).toMatchObject({ effect: 'ask', rule: 'big_refunds_ask' });
    expect(e.handler).toMatch(/the policy's handler, else the registry's handler/);
    expect(e.rules.find((r) => r.rule === 'big_refunds_ask')!.conditions[0]).toMatchObject({
      outcome: 'held',
      detail: 'amount > 100: number 500, holds',
    });
  });

  it('stops at the stage that refused: unknown tools and invalid arguments', async () => {
    const unknown = await explainCall(set, { name: 'rm_rf', arguments: {} });
    expect(unknown.decision).toMatchObject({ effect: 'deny', stage: 'lookup' });
    expect(unknown.found).toBeNull();
    const invalid = await explainCall(set, { name: 'read_file', arguments: {} });
    expect(invalid.decision).toMatchObject({ effect: 'deny', stage: 'validation' });
    expect(invalid.arguments).toBeNull();
  });

  it('agrees with the registry on every decision', async () => {
    const calls = [
      { name: 'read_file', arguments: { path: '/data/a' } },
      { name: 'read_file', arguments: { path: '/etc/a' } },
      { name: 'refund', arguments: { amount: 50, currency: 'EUR' } },
      { name: 'refund', arguments: { amount: 50, currency: 'GBP' } },
      { name: 'github:search', arguments: {} },
      { name: 'github:delete_repo', arguments: {} },
      { name: 'write_file', arguments: {} },
    ];
    const registry = set.registry();
    for (const call of calls) {
      const real = await registry.decide(call);
      const explained = await explainCall(set, call, {}, registry);
      const decided = await previewDecision(set, call, {}, registry);
      // The registry resolves ask with no handler as deny; explain and check report the ask itself.
      const effect = explained.decision.effect === 'ask' ? 'deny' : explained.decision.effect;
      expect([call.name, effect, explained.decision.rule]).toEqual([call.name, real.effect, real.rule]);
      expect(decided).toMatchObject({
        effect: explained.decision.effect,
        rule: explained.decision.rule,
        stage: explained.decision.stage,
      });
    }
  });
});
