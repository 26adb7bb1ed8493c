import {
  Agent,
  run,
  RunState,
  setTracingDisabled,
  Usage,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
} from '@openai/agents';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgentTools, mcpToolFilter } from '../../src/adapters/openai-agents/index.js';
import { PermissionPolicy, ToolRegistry, ToolTag, type Decision } from '../../src/index.js';

beforeAll(() => setTracingDisabled(true));

type Turn = { calls: { id: string; name: string; args: unknown }[] } | { text: string };

/** A fake Model: plays scripted turns and keeps every request it was sent. */
class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  #turns: Turn[];
  constructor(...turns: Turn[]) {
    this.#turns = turns;
  }
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const turn = this.#turns.shift() ?? { text: 'done' };
    const output: ModelResponse['output'] =
      'text' in turn
        ? [
            {
              type: 'message',
              role: 'assistant',
              status: 'completed',
              content: [{ type: 'output_text', text: turn.text }],
            },
          ]
        : turn.calls.map((c) => ({
            type: 'function_call' as const,
            callId: c.id,
            name: c.name,
            arguments: JSON.stringify(c.args),
            status: 'completed' as const,
          }));
    return { usage: new Usage(), output };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not used');
  }
}

/** The function_call_output the model was sent for a call id, if any. */
function outputFor(model: ScriptedModel, callId: string): string | undefined {
  for (const request of model.requests) {
    if (typeof request.input === 'string') continue;
    for (const item of request.input as AgentInputItem[]) {
      if (item.type === 'function_call_result' && item.callId === callId) {
        const out = item.output as string | { type: string; text?: string };
        return typeof out === 'string' ? out : (out.text ?? JSON.stringify(out));
      }
    }
  }
  return undefined;
}

function setUp() {
  const ran: string[] = [];
  const registry = new ToolRegistry();
  registry.register({
    name: 'search',
    description: 'Search',
    parameters: z.object({ query: z.string() }),
    metadata: { tags: [ToolTag.READ_ONLY] },
    execute: ({ query }) => {
      ran.push(`search:${query}`);
      return `found ${query}`;
    },
  });
  registry.register({
    name: 'refund',
    description: 'Refund an order',
    parameters: z.object({ order: z.string(), amount: z.number() }),
    execute: ({ order }) => {
      ran.push(`refund:${order}`);
      return `refunded ${order}`;
    },
  });
  registry.register({
    name: 'wipe',
    description: 'Wipe everything',
    parameters: { type: 'object', properties: {} },
    execute: () => {
      ran.push('wipe');
      return 'wiped';
    },
  });
  registry.setPermissionPolicy(
    new PermissionPolicy({
      rules: [
        {
          name: 'read',
          match: (t) => t.metadata.tags.has(ToolTag.READ_ONLY),
          result: 'allow',
          reason: 'reading is safe',
        },
        {
          name: 'big-refunds',
          match: (t, p) => t.name === 'refund' && (p['amount'] as number) > 100,
          result: 'deny',
          reason: 'refunds over 100 are not allowed',
        },
        { name: 'refunds', match: (t) => t.name === 'refund', result: 'ask', reason: 'refunds need a person' },
      ],
    }),
  );
  const decisions: Decision[] = [];
  registry.onChange((e) => {
    if (e.type === 'tool_decided') decisions.push(e.decision);
  });
  return { registry, ran, decisions };
}

interface AppContext {
  readonly tenantTools: readonly string[];
}
const gateContext = (rc: { context: AppContext }) => ({
  agent: 'concierge',
  tenant: { id: 'acme', tools: rc.context.tenantTools },
});

describe('toolgate/openai-agents with the real @openai/agents package', () => {
  it('offers only permitted tools (isEnabled from the allowlist of the run context)', async () => {
    const { registry } = setUp();
    const gated = createAgentTools<AppContext>(registry, { context: gateContext });
    const model = new ScriptedModel({ text: 'hi' });
    const agent = new Agent<AppContext>({ name: 'concierge', model, tools: gated.tools });
    await run(agent, 'hello', { context: { tenantTools: ['search', 'refund'] } });
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(['search', 'refund']);
  });

  it('a tool hidden by the allowlist that the model calls anyway is not run', async () => {
    const { registry, ran } = setUp();
    const gated = createAgentTools<AppContext>(registry, { context: gateContext });
    const model = new ScriptedModel({ calls: [{ id: 'w', name: 'wipe', args: {} }] }, { text: 'done' });
    const agent = new Agent<AppContext>({ name: 'concierge', model, tools: gated.tools });
    await run(agent, 'wipe it', { context: { tenantTools: ['search'] } }).catch(() => undefined);
    // Even if the SDK ran a hidden tool, the gate would refuse it at execution: call execute directly.
    const wipe = gated.tools.find((t) => t.name === 'wipe')!;
    const { RunContext } = await import('@openai/agents');
    const output = await wipe.invoke(new RunContext<AppContext>({ tenantTools: ['search'] }), '{}', {
      toolCall: { type: 'function_call', callId: 'w2', name: 'wipe', arguments: '{}' },
    });
    expect(String(output)).toMatch(/layer tenant/);
    expect(ran).toEqual([]);
  });

  it('runs an allowed call; a refused call never executes and the model reads the refusal', async () => {
    const { registry, ran, decisions } = setUp();
    const gated = createAgentTools<AppContext>(registry, { context: gateContext });
    const model = new ScriptedModel(
      {
        calls: [
          { id: 'a', name: 'search', args: { query: 'lamp' } },
          { id: 'b', name: 'refund', args: { order: 'o-1', amount: 500 } },
        ],
      },
      { text: 'done' },
    );
    const agent = new Agent<AppContext>({ name: 'concierge', model, tools: gated.tools });
    const result = await run(agent, 'go', {
      context: { tenantTools: ['search', 'refund'] },
      toolErrorFormatter: gated.toolErrorFormatter,
    });
    expect(result.interruptions ?? []).toEqual([]);
    expect(ran).toEqual(['search:lamp']);
    expect(outputFor(model, 'a')).toBe('found lamp');
    expect(outputFor(model, 'b')).toMatch(/refused \(rule "big-refunds"\).*cannot be appealed/);
    expect(decisions.map((d) => [d.tool, d.effect])).toEqual([
      ['search', 'allow'],
      ['refund', 'deny'],
    ]);
  });

  it('an ask interrupts the run; approve → it runs', async () => {
    const { registry, ran, decisions } = setUp();
    let asked = 0;
    registry.onChange((e) => void (e.type === 'permission_asked' && asked++));
    const gated = createAgentTools<AppContext>(registry, { context: gateContext });
    const model = new ScriptedModel(
      { calls: [{ id: 'r1', name: 'refund', args: { order: 'o-2', amount: 20 } }] },
      { text: 'refunded' },
    );
    const agent = new Agent<AppContext>({ name: 'concierge', model, tools: gated.tools });
    const context = { tenantTools: ['search', 'refund'] };
    let result = await run(agent, 'refund o-2', { context, toolErrorFormatter: gated.toolErrorFormatter });
    expect(result.interruptions).toHaveLength(1);
    expect(ran).toEqual([]);
    result.state.approve(result.interruptions[0]!);
    result = await run(agent, result.state, { toolErrorFormatter: gated.toolErrorFormatter });
    expect(ran).toEqual(['refund:o-2']);
    expect(outputFor(model, 'r1')).toBe('refunded o-2');
    expect(decisions.at(-1)).toMatchObject({ tool: 'refund', effect: 'allow', by: 'handler', asked: 'adapter' });
    expect(result.finalOutput).toBe('refunded');
    expect(asked).toBe(1);
  });

  it('an ask interrupts the run; reject → it never runs, the model gets the rejection and a deny Decision is recorded', async () => {
    const { registry, ran, decisions } = setUp();
    const gated = createAgentTools<AppContext>(registry, { context: gateContext });
    const model = new ScriptedModel(
      { calls: [{ id: 'r2', name: 'refund', args: { order: 'o-3', amount: 20 } }] },
      { text: 'ok' },
    );
    const agent = new Agent<AppContext>({ name: 'concierge', model, tools: gated.tools });
    let result = await run(agent, 'refund o-3', {
      context: { tenantTools: ['refund'] },
      toolErrorFormatter: gated.toolErrorFormatter,
    });
    result.state.reject(result.interruptions[0]!);
    result = await run(agent, result.state, { toolErrorFormatter: gated.toolErrorFormatter });
    expect(ran).toEqual([]);
    expect(outputFor(model, 'r2')).toMatch(/refunds need a person; the approver denied the call/);
    expect(decisions.at(-1)).toMatchObject({ tool: 'refund', effect: 'deny', stage: 'handler', asked: 'adapter' });
  });

  it('a resumed run is decided again: a tenant change between pause and approval refuses the call', async () => {
    const { registry, ran } = setUp();
    const tenant = { tools: ['refund'] as string[] };
    const gated = createAgentTools(registry, {
      context: () => ({ agent: 'concierge', tenant: { id: 'acme', tools: [...tenant.tools] } }),
    });
    const model = new ScriptedModel(
      { calls: [{ id: 'r3', name: 'refund', args: { order: 'o-4', amount: 20 } }] },
      { text: 'ok' },
    );
    const agent = new Agent({ name: 'concierge', model, tools: gated.tools });
    let result = await run(agent, 'refund', {});
    tenant.tools = ['search'];
    result.state.approve(result.interruptions[0]!);
    result = await run(agent, result.state);
    expect(ran).toEqual([]);
  });

  it('issue 10 attack 5: an approval is bound to the exact call — an edited state does not carry it to other arguments', async () => {
    const { registry, ran, decisions } = setUp();
    const gated = createAgentTools<AppContext>(registry, { context: gateContext });
    const model = new ScriptedModel(
      { calls: [{ id: 'r5', name: 'refund', args: { order: 'o-1', amount: 20 } }] },
      { text: 'ok' },
    );
    const agent = new Agent<AppContext>({ name: 'concierge', model, tools: gated.tools });
    const context = { tenantTools: ['search', 'refund'] };
    const paused = await run(agent, 'refund o-1', { context, toolErrorFormatter: gated.toolErrorFormatter });
    expect(paused.interruptions).toHaveLength(1);
    paused.state.approve(paused.interruptions[0]!); // the person approved refund(o-1, 20)
    const edited = paused.state.toString().replaceAll('o-1', 'o-9');
    const state = await RunState.fromString<AppContext, typeof agent>(agent, edited);
    await run(agent, state, { toolErrorFormatter: gated.toolErrorFormatter });
    expect(ran).toEqual([]);
    expect(decisions.at(-1)).toMatchObject({
      tool: 'refund',
      effect: 'deny',
      stage: 'handler',
      by: 'approval_invalid',
      parameters: { order: 'o-9', amount: 20 },
    });
    expect(outputFor(model, 'r5')).toMatch(/the approval was given for other arguments/);
  });

  it('an approval raised in another process cannot be checked, so it denies (fail closed)', async () => {
    const first = setUp();
    const gatedFirst = createAgentTools<AppContext>(first.registry, { context: gateContext });
    const model = new ScriptedModel(
      { calls: [{ id: 'r6', name: 'refund', args: { order: 'o-1', amount: 20 } }] },
      { text: 'ok' },
    );
    const context = { tenantTools: ['search', 'refund'] };
    const agentFirst = new Agent<AppContext>({ name: 'concierge', model, tools: gatedFirst.tools });
    const paused = await run(agentFirst, 'refund o-1', { context });
    paused.state.approve(paused.interruptions[0]!);
    const second = setUp();
    const gatedSecond = createAgentTools<AppContext>(second.registry, { context: gateContext });
    const agentSecond = new Agent<AppContext>({ name: 'concierge', model, tools: gatedSecond.tools });
    const state = await RunState.fromString<AppContext, typeof agentSecond>(agentSecond, paused.state.toString());
    await run(agentSecond, state);
    expect(second.ran).toEqual([]);
    expect(second.decisions.at(-1)).toMatchObject({ effect: 'deny', by: 'approval_invalid' });
  });

  it('builds an MCP toolFilter from the allowlist', async () => {
    const { registry } = setUp();
    const filter = mcpToolFilter(registry, {
      context: {
        agent: { name: 'a', tools: ['mcp:read_file', 'mcp:write_file'] },
        caller: { scopes: ['mcp:read_file'] },
      },
    });
    const ctx = { runContext: {} as never, agent: {} as never, serverName: 'fs' };
    expect(
      await filter(ctx, {
        name: 'read_file',
        inputSchema: { type: 'object', properties: {}, required: [], additionalProperties: false },
      }),
    ).toBe(true);
    expect(
      await filter(ctx, {
        name: 'write_file',
        inputSchema: { type: 'object', properties: {}, required: [], additionalProperties: false },
      }),
    ).toBe(false);
    const noDeclaration = mcpToolFilter(registry);
    expect(
      await noDeclaration(ctx, {
        name: 'read_file',
        inputSchema: { type: 'object', properties: {}, required: [], additionalProperties: false },
      }),
    ).toBe(false);
    expect(() => mcpToolFilter(registry, { prefix: 'a:b' })).toThrow(/option "prefix"/);
  });
});
