import { describe, expect, it } from 'vitest';
import { AgentRunner, ScriptedModel, ToolNotPermittedError, type Agent, type RunEvent } from '../../src/index.js';
import { shop } from './fixtures.js';

// auditor declares refund, which nobody above it declares: it is held to the intersection.
const auditor: Agent = { name: 'auditor', tools: ['ledger', 'refund'], instructions: 'Check the books.' };
// pricing must declare ledger too for auditor to use it: a hop narrows, it never passes through what it lacks.
const pricing: Agent = { name: 'pricing', tools: ['quote', 'discount', 'ledger', 'agent:auditor'], peers: [auditor] };
const concierge: Agent = {
  name: 'concierge',
  tools: ['search', 'quote', 'ledger', 'agent:pricing', 'agent:auditor'],
  peers: [pricing],
};

function chainModel(): ScriptedModel {
  return new ScriptedModel({
    concierge: [
      { toolCalls: [{ name: 'agent:pricing', arguments: { input: 'price a lamp' } }] },
      (r) => ({ text: `concierge: ${lastTool(r.messages)}` }),
    ],
    pricing: [
      {
        toolCalls: [
          { name: 'quote', arguments: { item: 'lamp' } },
          { name: 'agent:auditor', arguments: { input: 'check lamp pricing' } },
        ],
      },
      (r) => ({ text: `pricing: ${lastTool(r.messages)}` }),
    ],
    auditor: [
      { toolCalls: [{ name: 'ledger', arguments: {} }] },
      { toolCalls: [{ name: 'refund', arguments: { order: 'L1', amount: 1 } }] },
      { text: 'auditor: books ok' },
    ],
  });
}

function lastTool(messages: readonly { role: string; content?: string | null }[]): string {
  const tool = messages.filter((m) => m.role === 'tool').at(-1);
  return tool?.content ?? '';
}

describe('AgentRunner.run: delegation', () => {
  it('runs a delegation chain of three hops, each hop narrowed, with refusals reaching the parent with the path', async () => {
    const { registry, executed } = shop();
    const model = chainModel();
    const runner = new AgentRunner({ registry, model, onRefusal: 'continue' });
    const events: RunEvent[] = [];
    runner.on((e) => events.push(e));
    const result = await runner.run(concierge, 'what does a lamp cost?', { tenant: 'acme' });
    expect(result.status).toBe('completed');
    expect(result.output).toBe('concierge: pricing: auditor: books ok');
    expect(executed).toEqual({ quote: 1, ledger: 1 });

    // Each hop was shown only what the chain permits, in its own declared order.
    const shown = Object.fromEntries(model.requests.map((r) => [r.agent, r.tools.map((t) => t.name)]));
    // concierge declares agent:auditor (so pricing may delegate to it) but has no such peer itself: not shown.
    expect(shown['concierge']).toEqual(['search', 'quote', 'ledger', 'agent:pricing']);
    expect(shown['pricing']).toEqual(['quote', 'ledger', 'agent:auditor']); // discount is not declared by concierge
    expect(shown['auditor']).toEqual(['ledger']); // refund is declared by nobody above
    expect(model.requests.find((r) => r.agent === 'auditor')!.instructions).toBe('Check the books.');

    const refused = events.filter((e): e is Extract<RunEvent, { type: 'tool_refused' }> => e.type === 'tool_refused');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      agent: 'auditor',
      path: ['concierge', 'pricing', 'auditor'],
      tenant: 'acme',
      runId: result.runId,
    });
    expect(refused[0]!.decision).toMatchObject({
      tool: 'refund',
      agent: 'auditor',
      stage: 'allowlist',
      layer: 'caller',
    });
    expect(refused[0]!.error).toBeInstanceOf(ToolNotPermittedError);
    // The peers' decisions are the run's decisions.
    expect(result.decisions.map((d) => `${d.agent}:${d.tool}:${d.effect}`)).toEqual([
      'concierge:agent:pricing:allow',
      'pricing:quote:allow',
      'pricing:agent:auditor:allow',
      'auditor:ledger:allow',
      'auditor:refund:deny',
    ]);
  });

  it("a peer's allowlist refusal fails the whole run by default", async () => {
    const { registry, executed } = shop();
    const result = await new AgentRunner({ registry, model: chainModel() }).run(concierge, 'go');
    expect(result.status).toBe('failed');
    expect((result.error as ToolNotPermittedError).details).toEqual({
      tool: 'refund',
      agent: 'auditor',
      reason: 'caller',
    });
    expect(executed['refund']).toBeUndefined();
  });

  it('a hop that does not declare a tool takes it away from the hops below it', async () => {
    const { registry, executed } = shop();
    const narrowPricing: Agent = { name: 'pricing', tools: ['quote', 'agent:auditor'], peers: [auditor] };
    const top: Agent = { ...concierge, peers: [narrowPricing] };
    const result = await new AgentRunner({ registry, model: chainModel() }).run(top, 'go');
    expect(result.status).toBe('failed');
    expect((result.error as ToolNotPermittedError).details).toEqual({
      tool: 'ledger',
      agent: 'auditor',
      reason: 'caller',
    });
    expect(executed['ledger']).toBeUndefined();
  });

  it('the tenant and caller layers hold for peers: a tenant without the peer tool cannot delegate', async () => {
    const { registry } = shop();
    const runner = new AgentRunner({
      registry,
      model: chainModel(),
      tenants: { small: { tools: ['search', 'quote'] } },
    });
    const result = await runner.run(concierge, 'go', { tenant: 'small' });
    expect(result.status).toBe('failed');
    expect((result.error as ToolNotPermittedError).details).toEqual({
      tool: 'agent:pricing',
      agent: 'concierge',
      reason: 'tenant',
    });
  });

  it('a peer declared only by another agent is not callable (it is not a registered tool for this agent)', async () => {
    const { registry } = shop();
    const model = new ScriptedModel({ solo: [{ toolCalls: [{ name: 'agent:pricing', arguments: { input: 'x' } }] }] });
    const result = await new AgentRunner({ registry, model }).run({ name: 'solo', tools: ['agent:pricing'] }, 'go');
    expect(result.status).toBe('failed');
    expect(result.decisions[0]).toMatchObject({ stage: 'lookup' });
  });

  it('the depth cap stops a cycle of peers', async () => {
    const { registry } = shop();
    const ping: { name: string; tools: string[]; peers: Agent[] } = {
      name: 'ping',
      tools: ['agent:ping', 'agent:pong'],
      peers: [],
    };
    const pong: Agent = { name: 'pong', tools: ['agent:ping', 'agent:pong'], peers: [ping] };
    ping.peers.push(pong);
    const model = new ScriptedModel({
      ping: [
        { toolCalls: [{ name: 'agent:pong', arguments: { input: 'go' } }] },
        (r) => ({ text: `ping(${lastTool(r.messages)})` }),
      ],
      pong: [
        { toolCalls: [{ name: 'agent:ping', arguments: { input: 'go' } }] },
        (r) => ({ text: `pong(${lastTool(r.messages)})` }),
      ],
    });
    const runner = new AgentRunner({ registry, model, maxDepth: 2 });
    const events: RunEvent[] = [];
    runner.on('tool_refused', (e) => events.push(e));
    const result = await runner.run(ping, 'go');
    expect(result.status).toBe('completed');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      path: ['ping', 'pong', 'ping'],
      decision: { stage: 'depth', by: 'depth', tool: 'agent:pong' },
    });
    expect(result.output).toMatch(/^ping\(pong\(ping\(Tool call refused \(depth\): delegation is capped at depth 2/);
  });

  it('the registry may not hold a tool with a peer tool name', async () => {
    const { registry } = shop();
    registry.register({ name: 'agent:pricing', parameters: { type: 'object' }, execute: () => 'x' });
    await expect(new AgentRunner({ registry, model: chainModel() }).run(concierge, 'go')).rejects.toThrow(/peer agent/);
  });
});
