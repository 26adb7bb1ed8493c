/**
 * The small hooks the runner added to the core gate: a route handler in resolveAsk (asked after the
 * policy's own handler, before the registry's) and a `pending` answer that only such a route accepts.
 */
import { describe, expect, it } from 'vitest';
import { PermissionPolicy, PermissionResult, ToolRegistry } from '../../src/index.js';
import { precheck, resolveAsk } from '../../src/gate.js';
import { callHandler } from '../../src/permissions/handler.js';

function registry(): ToolRegistry {
  const r = new ToolRegistry({ handlerTimeoutMs: 200 });
  r.register({ name: 'wipe', parameters: { type: 'object' }, execute: () => 'wiped' });
  r.setPermissionPolicy(
    new PermissionPolicy({
      rules: [{ name: 'ask_wipe', tools: ['wipe'], result: PermissionResult.ASK }],
      version: 'p1',
    }),
  );
  return r;
}

async function ask(r: ToolRegistry) {
  const pre = await precheck(
    { id: 'c1', name: 'wipe', arguments: {}, format: 'toolgate' },
    { agent: { name: 'a', tools: ['wipe'] } },
    r.environment(),
  );
  if (pre.kind !== 'ask') throw new Error('expected an ask');
  return pre;
}

describe('core hooks for the runner', () => {
  it("'pending' from a registry handler still denies on the registry's own routes (invoke)", async () => {
    const r = registry();
    r.setPermissionHandler(() => 'pending' as never);
    let ran = false;
    r.unregister('wipe');
    r.register({ name: 'wipe', parameters: { type: 'object' }, execute: () => (ran = true) });
    const result = await r.invoke('wipe', {});
    expect(ran).toBe(false);
    expect(result.decision).toMatchObject({ effect: 'deny', stage: 'handler', by: 'handler_invalid' });
  });

  it('callHandler accepts pending only when asked to', async () => {
    const request = {
      toolName: 'wipe',
      parameters: {},
      reason: '',
      ruleName: 'r',
      metadata: registry().get('wipe')!.metadata,
      callId: 'c',
      agent: 'a',
      tenant: null,
      runId: null,
    };
    expect(await callHandler(() => 'pending', request, 100)).toMatchObject({ answer: 'deny', failure: 'invalid' });
    expect(await callHandler(() => 'pending', request, 100, { pending: true })).toEqual({ answer: 'pending' });
  });

  it('a route handler is asked after the policy handler and before the registry handler, recorded as runner', async () => {
    const r = registry();
    r.setPermissionHandler(() => PermissionResult.DENY);
    const pre = await ask(r);
    const viaRoute = await resolveAsk(pre, r.environment(), { handler: () => 'allow', asked: 'runner', pending: true });
    expect(viaRoute).toMatchObject({ effect: 'allow', asked: 'runner', by: 'handler' });
    const pending = await resolveAsk(pre, r.environment(), {
      handler: () => 'pending',
      asked: 'runner',
      pending: true,
    });
    expect(pending).toMatchObject({ effect: 'pending', base: { callId: 'c1', asked: 'runner' } });
    // Without a route handler the registry's is asked, as before.
    expect(await resolveAsk(pre, r.environment(), { handler: null, asked: 'runner', pending: true })).toMatchObject({
      effect: 'deny',
      asked: 'registry',
    });
    // The policy's own handler comes first.
    r.setPermissionPolicy(
      new PermissionPolicy({
        rules: [{ name: 'ask_wipe', tools: ['wipe'], result: PermissionResult.ASK }],
        handler: () => PermissionResult.DENY,
      }),
    );
    const pre2 = await ask(r);
    expect(
      await resolveAsk(pre2, r.environment(), { handler: () => 'allow', asked: 'runner', pending: true }),
    ).toMatchObject({ effect: 'deny', asked: 'policy' });
  });
});
