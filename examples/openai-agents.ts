/**
 * toolgate + the OpenAI Agents SDK: tools offered per the allowlist, `ask` as the SDK's interruption,
 * refusals as tool output the model reads. Runs offline with a scripted Model:  npx tsx examples/openai-agents.ts
 */
import {
  Agent,
  run,
  setTracingDisabled,
  Usage,
  type Model,
  type ModelRequest,
  type ModelResponse,
} from '@openai/agents';
import { z } from 'zod';
import { createAgentTools } from '../src/adapters/openai-agents/index.js';
import { PermissionPolicy, ToolRegistry, ToolTag } from '../src/index.js';

setTracingDisabled(true);

const registry = new ToolRegistry();
registry.register({
  name: 'lookup',
  description: 'Look up an order',
  parameters: z.object({ order: z.string() }),
  metadata: { tags: [ToolTag.READ_ONLY] },
  execute: ({ order }) => `${order}: lamp, 20 EUR, delivered`,
});
registry.register({
  name: 'refund',
  description: 'Refund an order',
  parameters: z.object({ order: z.string(), amount: z.number() }),
  execute: ({ order, amount }) => `refunded ${amount} on ${order}`,
});
registry.setPermissionPolicy(
  new PermissionPolicy({
    rules: [
      { name: 'reads', tags: ['read_only'], result: 'allow', reason: 'reading is safe' },
      {
        name: 'big-refunds',
        tools: ['refund'],
        match: (_t, p) => Number(p['amount']) > 100,
        result: 'deny',
        reason: 'refunds over 100 are not allowed',
      },
      { name: 'refunds', tools: ['refund'], result: 'ask', reason: 'refunds need a person' },
    ],
  }),
);
registry.onChange((e) => {
  if (e.type === 'tool_decided')
    console.log(`  decision: ${e.decision.tool} → ${e.decision.effect} (${e.decision.reason})`);
});

/** A stand-in for a real model: it calls lookup, then two refunds, then answers. */
class ScriptedModel implements Model {
  #turn = 0;
  async getResponse(_request: ModelRequest): Promise<ModelResponse> {
    const fc = (callId: string, name: string, args: unknown) => ({
      type: 'function_call' as const,
      callId,
      name,
      arguments: JSON.stringify(args),
      status: 'completed' as const,
    });
    const turns: ModelResponse['output'][] = [
      [fc('1', 'lookup', { order: 'o-7' })],
      [fc('2', 'refund', { order: 'o-7', amount: 900 }), fc('3', 'refund', { order: 'o-7', amount: 20 })],
      [
        {
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Refunded 20 EUR on o-7.' }],
        },
      ],
    ];
    return { usage: new Usage(), output: turns[Math.min(this.#turn++, turns.length - 1)]! };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('streaming is not scripted');
  }
}

interface Session {
  readonly tenant: string;
  readonly plan: readonly string[];
}
const gated = createAgentTools<Session>(registry, {
  context: (rc) => ({ agent: 'support', tenant: { id: rc.context.tenant, tools: rc.context.plan } }),
});
const agent = new Agent<Session>({
  name: 'support',
  instructions: 'Help with orders.',
  model: new ScriptedModel(),
  tools: gated.tools,
});

let result = await run(agent, 'Refund my lamp', {
  context: { tenant: 'acme', plan: ['lookup', 'refund'] },
  toolErrorFormatter: gated.toolErrorFormatter,
});
for (const item of result.interruptions ?? []) {
  console.log(`interrupted for approval: ${item.name} ${item.arguments ?? ''} → a person approves`);
  result.state.approve(item);
}
result = await run(agent, result.state, { toolErrorFormatter: gated.toolErrorFormatter });
console.log('final output:', result.finalOutput);
