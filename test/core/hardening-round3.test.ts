/**
 * Issue 22 ("Hardening round 3"), the in-process items: the handler's fallback goes with the handler, and an
 * event (or an audit record) handed to several listeners cannot be changed by one of them for the next.
 */
import { describe, expect, it } from 'vitest';
import {
  AgentRunner,
  defineTool,
  PermissionPolicy,
  PermissionResult,
  ToolRegistry,
  type RegistryEvent,
} from '../../src/index.js';
import { ScriptedModel, type RunEvent } from '../../src/runner/index.js';
import { auditRegistry, fanOut } from '../../src/stores/audit.js';
import { MemoryAuditSink } from '../../src/stores/memory.js';
import type { AuditRecord } from '../../src/stores/types.js';

function registry(result: PermissionResult): { registry: ToolRegistry; ran: () => number } {
  let ran = 0;
  const r = new ToolRegistry();
  r.register(
    defineTool({
      name: 'wipe',
      description: 'wipes',
      parameters: { type: 'object' },
      execute: () => {
        ran++;
        return 'wiped';
      },
    }),
  );
  r.setPermissionPolicy(
    new PermissionPolicy({ rules: [{ name: 'no-wipes', match: () => true, result, reason: 'wiping is refused' }] }),
  );
  return { registry: r, ran: () => ran };
}

describe('removePermissionHandler (issue 22)', () => {
  it('restores the default deny fallback: an ask after removing a handler set with fallback allow is denied', async () => {
    const { registry: r, ran } = registry(PermissionResult.ASK);
    r.setPermissionHandler(() => PermissionResult.DENY, { fallback: PermissionResult.ALLOW });
    r.removePermissionHandler();
    const result = await r.invoke('wipe', {});
    expect(result.status).toBe('refused');
    expect(result.decision.effect).toBe('deny');
    expect(ran()).toBe(0);
  });

  it('a handler set again without a fallback does not inherit the old one', async () => {
    const { registry: r, ran } = registry(PermissionResult.ASK);
    r.setPermissionHandler(() => PermissionResult.DENY, { fallback: PermissionResult.ALLOW });
    r.setPermissionHandler(() => PermissionResult.DENY);
    r.removePermissionHandler();
    expect((await r.invoke('wipe', {})).status).toBe('refused');
    expect(ran()).toBe(0);
  });
});

describe('events are frozen for every listener (issue 22)', () => {
  it('an earlier listener cannot turn a refusal into an allow for auditRegistry', async () => {
    const { registry: r, ran } = registry(PermissionResult.DENY);
    const errors: unknown[] = [];
    r.onChange((event) => {
      const writable = event as { -readonly [K in keyof RegistryEvent]: unknown } & Record<string, unknown>;
      for (const change of [
        () => (writable['type'] = 'tool_executed'),
        () => (writable['tool'] = 'other'),
        () => (writable['reason'] = 'fine'),
        () => (writable['ruleName'] = 'allow-all'),
        () => (writable['decision'] = { ...(event as { decision: object }).decision, effect: 'allow' }),
      ]) {
        try {
          change();
        } catch (error) {
          errors.push(error);
        }
      }
    });
    const sink = new MemoryAuditSink();
    const audit = auditRegistry(r, sink);
    const seen: RegistryEvent[] = [];
    r.onChange((event) => seen.push(event));
    const result = await r.invoke('wipe', {});
    await audit.close();
    expect(result.status).toBe('refused');
    expect(ran()).toBe(0);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => e instanceof TypeError)).toBe(true);
    expect(seen.map((e) => e.type)).toEqual(['permission_denied', 'tool_decided']);
    const denied = seen[0] as Extract<RegistryEvent, { type: 'permission_denied' }>;
    expect(denied.tool).toBe('wipe');
    expect(denied.reason).toBe('wiping is refused');
    expect(denied.ruleName).toBe('no-wipes');
    expect(sink.records).toHaveLength(1);
    expect(sink.records[0]!.decision.effect).toBe('deny');
    expect(sink.records[0]!.decision.rule).toBe('no-wipes');
  });

  it("the runner's events are frozen too", async () => {
    const { registry: r } = registry(PermissionResult.DENY);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'wipe', arguments: {} }] }, { text: 'done' }]);
    const runner = new AgentRunner({ registry: r, model, secret: 'x'.repeat(32) });
    const tampered: unknown[] = [];
    const later: RunEvent[] = [];
    runner.on((event) => {
      try {
        (event as unknown as Record<string, unknown>)['type'] = 'run_finished';
      } catch (error) {
        tampered.push(error);
      }
      try {
        (event as unknown as { path: string[] }).path.push('forged');
      } catch (error) {
        tampered.push(error);
      }
    });
    runner.on((event) => later.push(event));
    await runner.run({ name: 'ops', tools: ['wipe'] }, 'go');
    expect(later.some((e) => e.type === 'tool_refused')).toBe(true);
    expect(later.every((e) => !e.path.includes('forged'))).toBe(true);
    expect(tampered.length).toBe(later.length * 2);
  });

  it('fanOut hands every sink the same record, frozen', async () => {
    const { registry: r } = registry(PermissionResult.DENY);
    const second = new MemoryAuditSink();
    const first = {
      write(record: AuditRecord): void {
        (record as { route: string }).route = 'forged';
      },
    };
    const audit = auditRegistry(r, fanOut(first, second));
    await r.invoke('wipe', {});
    await audit.close();
    expect(second.records).toHaveLength(1);
    expect(second.records[0]!.route).toBe('registry');
  });
});
