/** The adapters' route onto the gate: an SDK approval flow is a handler like any other, and fails closed. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { check, dispatchOne, settle } from '../../src/adapters/route.js';
import { PermissionPolicy, ToolRegistry, type PermissionHandler } from '../../src/index.js';

function setUp() {
  const ran: string[] = [];
  const registry = new ToolRegistry({ handlerTimeoutMs: 50 });
  registry.register({
    name: 'refund',
    parameters: z.object({ order: z.string() }),
    execute: ({ order }) => void ran.push(String(order)),
  });
  registry.setPermissionPolicy(
    new PermissionPolicy({
      rules: [{ name: 'refunds', tools: ['refund'], result: 'ask', reason: 'refunds need a person' }],
    }),
  );
  return { registry, ran };
}
const call = { id: 'c1', name: 'refund', arguments: { order: 'o-1' } };

describe('adapter approvers (resolveAsk with an approver)', () => {
  it('an approving approver allows, recorded as asked by the adapter', async () => {
    const { registry, ran } = setUp();
    const result = await dispatchOne(registry, call, {}, () => 'allow');
    expect(result.status).toBe('ok');
    expect(result.decision).toMatchObject({ effect: 'allow', by: 'handler', asked: 'adapter', rule: 'refunds' });
    expect(ran).toEqual(['o-1']);
  });

  it.each<[string, PermissionHandler, string]>([
    [
      'throws',
      () => {
        throw new Error('the UI crashed');
      },
      'handler_error',
    ],
    ['times out', () => new Promise<never>(() => undefined), 'handler_timeout'],
    ['answers ask', () => 'ask', 'handler_invalid'],
    ['answers deny', () => 'deny', 'handler'],
  ])('an approver that %s denies and nothing runs', async (_what, approver, by) => {
    const { registry, ran } = setUp();
    const result = await dispatchOne(registry, call, {}, approver);
    expect(result.status).toBe('refused');
    expect(result.decision).toMatchObject({ effect: 'deny', stage: 'handler', by, asked: 'adapter' });
    expect(ran).toEqual([]);
  });

  it('the approver replaces the registry handler only for that call; without one the registry handler decides', async () => {
    const { registry } = setUp();
    registry.setPermissionHandler(() => 'deny');
    expect((await dispatchOne(registry, call, {}, () => 'allow')).decision).toMatchObject({
      effect: 'allow',
      asked: 'adapter',
    });
    expect((await dispatchOne(registry, call, {})).decision).toMatchObject({ effect: 'deny', asked: 'registry' });
  });

  it("a policy's own handler is asked before the approver (the gate's chain)", async () => {
    const { registry, ran } = setUp();
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [{ name: 'refunds', tools: ['refund'], result: 'ask' }], handler: () => 'deny' }),
    );
    expect((await dispatchOne(registry, call, {}, () => 'allow')).decision).toMatchObject({
      effect: 'deny',
      asked: 'policy',
    });
    expect(ran).toEqual([]);
  });

  it('check emits nothing; settle emits the ask and the decision once', async () => {
    const { registry } = setUp();
    const events: string[] = [];
    registry.onChange((e) => events.push(e.type));
    const pre = await check(registry, call, {});
    expect(pre.kind).toBe('ask');
    expect(events).toEqual([]);
    await settle(registry, pre, () => 'deny');
    expect(events).toEqual(['permission_asked', 'permission_denied', 'tool_decided']);
  });
});
