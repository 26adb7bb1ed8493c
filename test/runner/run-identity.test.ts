/**
 * A run id chosen by the caller (a conversation id) is not the run's identity: two tenants, or two callers
 * of one tenant, naming the same run id on the same stores never read each other's ledger rows, tally or
 * remembered answers. Each call of each run is decided by the gate for the run that makes it.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AgentRunner,
  defineTool,
  PermissionPolicy,
  RunStateError,
  ToolRegistry,
  type Agent,
  type RunState,
} from '../../src/index.js';
import { ScriptedModel } from '../../src/runner/index.js';
import { memoryStores } from '../../src/stores/index.js';
import { ASK_BIG_REFUNDS, shop } from './fixtures.js';

const SECRET = 'test-secret-with-enough-bytes-0123456789';

function lookupRegistry(): { registry: ToolRegistry; ran: string[] } {
  const ran: string[] = [];
  const registry = new ToolRegistry();
  registry.register(
    defineTool({
      name: 'lookup',
      description: 'Look a record up',
      parameters: z.object({ id: z.string() }),
      execute: ({ id }) => {
        ran.push(id);
        return `secret record ${id}`;
      },
    }),
  );
  return { registry, ran };
}

const lookupTurns = () =>
  new ScriptedModel([{ toolCalls: [{ id: 'call_1', name: 'lookup', arguments: { id: 'r1' } }] }, { text: 'done' }]);

const agent: Agent = { name: 'concierge', tools: ['lookup'] };

describe('one run id used by two identities on one set of stores', () => {
  it('another tenant (allowed no tools) is refused by the gate, never handed the first tenant’s result', async () => {
    const stores = memoryStores();
    const { registry, ran } = lookupRegistry();
    const tenants = { acme: {}, globex: { tools: [] as string[] } };
    const a = new AgentRunner({
      registry,
      model: lookupTurns(),
      stores,
      tenants,
      secret: SECRET,
      onRefusal: 'continue',
    });
    const b = new AgentRunner({
      registry,
      model: lookupTurns(),
      stores,
      tenants,
      secret: SECRET,
      onRefusal: 'continue',
    });
    const first = await a.run(agent, 'hi', { tenant: 'acme', caller: { id: 'alice' }, runId: 'conv-1' });
    expect(first.status).toBe('completed');
    expect(first.messages.find((m) => m.role === 'tool')).toMatchObject({ content: 'secret record r1' });
    const second = await b.run(agent, 'hi', { tenant: 'globex', caller: { id: 'mallory' }, runId: 'conv-1' });
    const tool = second.messages.find((m) => m.role === 'tool');
    expect(tool?.content).not.toContain('secret record');
    expect(tool).toMatchObject({ isError: true });
    expect(second.decisions).toHaveLength(1);
    expect(second.decisions[0]).toMatchObject({ tool: 'lookup', effect: 'deny', layer: 'tenant' });
    expect(ran).toEqual(['r1']);
  });

  it('with onRefusal "fail" (the default) the other tenant’s run fails at the allowlist', async () => {
    const stores = memoryStores();
    const { registry } = lookupRegistry();
    const tenants = { acme: {}, globex: { tools: [] as string[] } };
    const a = new AgentRunner({ registry, model: lookupTurns(), stores, tenants, secret: SECRET });
    const b = new AgentRunner({ registry, model: lookupTurns(), stores, tenants, secret: SECRET });
    await a.run(agent, 'hi', { tenant: 'acme', caller: { id: 'alice' }, runId: 'conv-1' });
    const second = await b.run(agent, 'hi', { tenant: 'globex', caller: { id: 'alice' }, runId: 'conv-1' });
    expect(second.status).toBe('failed');
    expect(JSON.stringify(second.messages)).not.toContain('secret record');
  });

  it('another caller of the same tenant runs its own call (executed for it, not answered from the ledger)', async () => {
    const stores = memoryStores();
    const { registry, ran } = lookupRegistry();
    const a = new AgentRunner({ registry, model: lookupTurns(), stores, secret: SECRET });
    const b = new AgentRunner({ registry, model: lookupTurns(), stores, secret: SECRET });
    await a.run(agent, 'hi', { tenant: 'acme', caller: { id: 'alice' }, runId: 'conv-1' });
    const second = await b.run(agent, 'hi', { tenant: 'acme', caller: { id: 'bob' }, runId: 'conv-1' });
    expect(second.status).toBe('completed');
    expect(second.attempts).toBe(1);
    expect(ran).toEqual(['r1', 'r1']);
  });

  it('the tally is the run identity’s: another tenant’s turns under the same run id do not spend this one’s budget', async () => {
    const stores = memoryStores();
    const { registry } = lookupRegistry();
    const tenants = { acme: { maxIterations: 2 }, globex: { maxIterations: 2 } };
    const a = new AgentRunner({ registry, model: lookupTurns(), stores, tenants, secret: SECRET });
    const b = new AgentRunner({ registry, model: lookupTurns(), stores, tenants, secret: SECRET });
    expect((await a.run(agent, 'hi', { tenant: 'acme', caller: { id: 'alice' }, runId: 'conv-1' })).status).toBe(
      'completed',
    );
    const second = await b.run(agent, 'hi', { tenant: 'globex', caller: { id: 'alice' }, runId: 'conv-1' });
    expect(second.status).toBe('completed');
    expect(second.iterations).toBe(2);
  });

  it('a ledger row under the run’s key but written by another identity is refused, never answered from', async () => {
    const stores = memoryStores();
    const { registry, ran } = lookupRegistry();
    // A row planted under exactly this run's key by an owner that is not this run (a store that mapped two
    // keys to one row would do the same).
    const key = JSON.stringify(['conv-1', 'globex', 'mallory', 'concierge', 0, 'call_1']);
    await stores.ledger.reserve(key, 'someone-else', 60_000);
    await stores.ledger.record(key, 'someone-else', { content: 'secret record of acme', isError: false });
    const runner = new AgentRunner({ registry, model: lookupTurns(), stores, secret: SECRET });
    const result = await runner.run(agent, 'hi', { tenant: 'globex', caller: { id: 'mallory' }, runId: 'conv-1' });
    expect(result.status).toBe('failed');
    expect(result.status === 'failed' ? result.error : null).toBeInstanceOf(RunStateError);
    expect(JSON.stringify(result.messages)).not.toContain('secret record');
    expect(ran).toEqual([]);
  });

  it('paused runs of two tenants under one run id resume on their own rows; a replay runs nothing', async () => {
    const stores = memoryStores();
    const f = shop({ policyVersion: 'v1' });
    f.registry.setPermissionPolicy(new PermissionPolicy({ version: 'v1', rules: [ASK_BIG_REFUNDS] }));
    const refundTurns = () =>
      new ScriptedModel([
        { toolCalls: [{ id: 'call_1', name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
        { text: 'done' },
      ]);
    const make = () =>
      new AgentRunner({ registry: f.registry, model: refundTurns(), stores, secret: SECRET, handler: () => 'pending' });
    const concierge: Agent = { name: 'concierge', tools: ['refund'] };
    const states: RunState[] = [];
    for (const tenant of ['acme', 'globex']) {
      const r = await make().run(concierge, 'refund', { tenant, caller: { id: 'alice' }, runId: 'conv-1' });
      if (r.status !== 'paused') throw new Error(`expected a pause, got ${r.status}`);
      const runner = make();
      const done = await runner.resume(JSON.parse(JSON.stringify(r.state)) as RunState, [
        runner.answer(r.pending[0]!, 'allow'),
      ]);
      expect(done.status).toBe('completed');
      states.push(r.state);
    }
    expect(f.refunds).toHaveLength(2);
    // Replaying acme's state with a fresh answer: its row answers, nothing runs again.
    const again = make();
    const replay = await again.resume(states[0]!, []);
    expect(replay.status).not.toBe('failed');
    expect(f.refunds).toHaveLength(2);
  });

  it('a session answer is the caller’s: another caller naming the same session is asked again', async () => {
    const stores = memoryStores();
    const f = shop({ policyVersion: 'v1' });
    f.registry.setPermissionPolicy(new PermissionPolicy({ version: 'v1', rules: [ASK_BIG_REFUNDS] }));
    const refundTurns = () =>
      new ScriptedModel([
        { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
        { text: 'done' },
      ]);
    const make = () =>
      new AgentRunner({ registry: f.registry, model: refundTurns(), stores, secret: SECRET, handler: () => 'pending' });
    const concierge: Agent = { name: 'concierge', tools: ['refund'] };
    const first = await make().run(concierge, 'x', { tenant: 'acme', caller: { id: 'alice' }, session: 'S' });
    if (first.status !== 'paused') throw new Error(`expected a pause, got ${first.status}`);
    const a = make();
    await a.resume(first.state, [a.answer(first.pending[0]!, 'allow', { scope: 'session' })]);
    // alice's next run of the session is not asked; bob's is.
    expect((await make().run(concierge, 'x', { tenant: 'acme', caller: { id: 'alice' }, session: 'S' })).status).toBe(
      'completed',
    );
    expect((await make().run(concierge, 'x', { tenant: 'acme', caller: { id: 'bob' }, session: 'S' })).status).toBe(
      'paused',
    );
  });
});
