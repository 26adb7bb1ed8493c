import { generateText, isStepCount, type ModelMessage } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAiSdkTools } from '../../src/adapters/ai-sdk/index.js';
import { PermissionPolicy, ToolRegistry, ToolTag, type Decision, type PermissionRule } from '../../src/index.js';

type GenerateResult = Awaited<ReturnType<typeof MockLanguageModelV4.prototype.doGenerate>>;
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

function toolCallTurn(...calls: { id: string; name: string; input: unknown }[]): GenerateResult {
  return {
    content: calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.id, toolName: c.name, input: JSON.stringify(c.input) })),
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}
const textTurn = (text: string): GenerateResult => ({ content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] });

/** A mock model that plays the given turns in order. */
function scripted(...turns: GenerateResult[]): MockLanguageModelV4 {
  let i = 0;
  return new MockLanguageModelV4({ doGenerate: async () => turns[Math.min(i++, turns.length - 1)]! });
}

function setUp() {
  const ran: string[] = [];
  const registry = new ToolRegistry();
  registry.register({
    name: 'search',
    description: 'Search the catalogue',
    parameters: z.object({ query: z.string() }),
    metadata: { tags: [ToolTag.READ_ONLY] },
    execute: ({ query }) => {
      ran.push(`search:${query}`);
      return { hits: [`${query}-1`] };
    },
  });
  registry.register({
    name: 'refund',
    description: 'Refund an order',
    parameters: z.object({ order: z.string(), amount: z.number() }),
    metadata: { tags: [ToolTag.DESTRUCTIVE] },
    execute: ({ order }) => {
      ran.push(`refund:${order}`);
      return `refunded ${order}`;
    },
  });
  registry.register({
    name: 'delete_account',
    description: 'Delete the account',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    execute: () => {
      ran.push('delete_account');
      return 'deleted';
    },
  });
  const rules: PermissionRule[] = [
    { name: 'read', match: (t) => t.metadata.tags.has(ToolTag.READ_ONLY), result: 'allow', reason: 'reading is safe' },
    { name: 'big-refunds', match: (t, p) => t.name === 'refund' && (p['amount'] as number) > 100, result: 'deny', reason: 'refunds over 100 are not allowed' },
    { name: 'refunds', match: (t) => t.name === 'refund', result: 'ask', reason: 'refunds need a person' },
  ];
  registry.setPermissionPolicy(new PermissionPolicy({ rules }));
  const decisions: Decision[] = [];
  registry.onChange((e) => {
    if (e.type === 'tool_decided') decisions.push(e.decision);
  });
  return { registry, ran, decisions };
}

const context = { agent: 'concierge', tenant: { id: 'acme', tools: ['search', 'refund'] } };

describe('toolgate/ai-sdk with the real `ai` package', () => {
  it('offers the model only the tools the allowlist permits', async () => {
    const { registry } = setUp();
    const model = scripted(textTurn('hi'));
    await generateText({ model, prompt: 'hello', ...createAiSdkTools(registry, { context }) });
    const offered = (model.doGenerateCalls[0]!.tools ?? []).map((t) => t.name);
    expect(offered).toEqual(['search', 'refund']);
  });

  it('runs an allowed call and hands its output to the model', async () => {
    const { registry, ran, decisions } = setUp();
    const model = scripted(toolCallTurn({ id: 'c1', name: 'search', input: { query: 'lamp' } }), textTurn('done'));
    const result = await generateText({ model, prompt: 'find a lamp', stopWhen: isStepCount(3), ...createAiSdkTools(registry, { context }) });
    expect(ran).toEqual(['search:lamp']);
    expect(result.steps[0]!.toolResults.map((r) => r.output)).toEqual([{ hits: ['lamp-1'] }]);
    expect(decisions.map((d) => [d.tool, d.effect, d.by])).toEqual([['search', 'allow', 'rule']]);
  });

  it('never executes a refused call; the model gets the SDK denied result with the refusal text', async () => {
    const { registry, ran, decisions } = setUp();
    const model = scripted(toolCallTurn({ id: 'c1', name: 'refund', input: { order: 'o-1', amount: 500 } }), textTurn('sorry'));
    const result = await generateText({ model, prompt: 'refund', stopWhen: isStepCount(3), ...createAiSdkTools(registry, { context }) });
    expect(ran).toEqual([]);
    expect(decisions.map((d) => [d.tool, d.effect, d.rule])).toEqual([['refund', 'deny', 'big-refunds']]);
    // The second model call is shown the denial, with toolgate's refusal text.
    const prompt = model.doGenerateCalls[1]!.prompt;
    const toolMessage = prompt.find((m) => m.role === 'tool')!;
    const part = (toolMessage.content as { type: string; output?: { type: string; reason?: string } }[]).find((p) => p.type === 'tool-result')!;
    expect(part.output?.type).toBe('execution-denied');
    expect(part.output?.reason).toMatch(/refused \(rule "big-refunds"\).*refunds over 100 are not allowed/);
    expect(result.text).toBe('sorry');
  });

  it('refuses in execute as well when toolApproval is not passed (error result with the refusal text)', async () => {
    const { registry, ran } = setUp();
    const { tools } = createAiSdkTools(registry, { context });
    const model = scripted(toolCallTurn({ id: 'c1', name: 'refund', input: { order: 'o-1', amount: 500 } }), textTurn('ok'));
    const result = await generateText({ model, prompt: 'refund', stopWhen: isStepCount(3), tools });
    expect(ran).toEqual([]);
    const errors = result.steps[0]!.content.filter((p) => p.type === 'tool-error');
    expect(errors).toHaveLength(1);
    expect(String((errors[0] as { error: unknown }).error)).toMatch(/refunds over 100 are not allowed/);
  });

  it('an ask without any approval path is denied in execute (fail closed), never run', async () => {
    const { registry, ran, decisions } = setUp();
    const { tools } = createAiSdkTools(registry, { context });
    const model = scripted(toolCallTurn({ id: 'c1', name: 'refund', input: { order: 'o-2', amount: 20 } }), textTurn('ok'));
    await generateText({ model, prompt: 'refund', stopWhen: isStepCount(3), tools });
    expect(ran).toEqual([]);
    expect(decisions.at(-1)).toMatchObject({ effect: 'deny', stage: 'policy', by: 'no_handler' });
  });

  it('a tool hidden by the allowlist that the model calls anyway is not run', async () => {
    const { registry, ran } = setUp();
    const model = scripted(toolCallTurn({ id: 'c1', name: 'delete_account', input: {} }), textTurn('ok'));
    await generateText({ model, prompt: 'x', stopWhen: isStepCount(3), ...createAiSdkTools(registry, { context }) });
    expect(ran).toEqual([]);
  });

  it('surfaces an ask as a tool-approval-request; runs it after approval, not after a denial', async () => {
    for (const approved of [true, false]) {
      const { registry, ran, decisions } = setUp();
      let asked = 0;
      registry.onChange((e) => void (e.type === 'permission_asked' && asked++));
      const gated = createAiSdkTools(registry, { context });
      const first = scripted(toolCallTurn({ id: 'c1', name: 'refund', input: { order: 'o-3', amount: 20 } }));
      const paused = await generateText({ model: first, prompt: 'refund o-3', ...gated });
      const request = paused.content.find((p) => p.type === 'tool-approval-request');
      expect(request).toMatchObject({ type: 'tool-approval-request', reason: 'refunds need a person', toolCall: { toolName: 'refund' } });
      expect(ran).toEqual([]);

      const messages: ModelMessage[] = [
        { role: 'user', content: 'refund o-3' },
        ...paused.response.messages,
        { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: (request as { approvalId: string }).approvalId, approved }] },
      ];
      const second = scripted(textTurn('finished'));
      const denials = await gated.recordDenials(messages);
      await generateText({ model: second, messages, ...gated });
      expect(ran).toEqual(approved ? ['refund:o-3'] : []);
      expect(denials.map((d) => [d.tool, d.effect, d.stage, d.asked])).toEqual(approved ? [] : [['refund', 'deny', 'handler', 'adapter']]);
      if (approved) expect(decisions.at(-1)).toMatchObject({ tool: 'refund', effect: 'allow', by: 'handler', asked: 'adapter' });
      expect(asked).toBe(1);
    }
  });

  it('with requireSignedApprovals, runs an approved ask only when the SDK signed the approval request', async () => {
    for (const secret of [undefined, 'an-approval-secret']) {
      const { registry, ran } = setUp();
      const gated = createAiSdkTools(registry, { context, requireSignedApprovals: true });
      const sdk = secret ? { experimental_toolApprovalSecret: secret } : {};
      const paused = await generateText({ model: scripted(toolCallTurn({ id: 'c1', name: 'refund', input: { order: 'o-6', amount: 20 } })), prompt: 'refund', ...gated, ...sdk });
      const request = paused.content.find((p) => p.type === 'tool-approval-request') as { approvalId: string };
      const messages: ModelMessage[] = [
        { role: 'user', content: 'refund' },
        ...paused.response.messages,
        { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: true }] },
      ];
      await generateText({ model: scripted(textTurn('ok')), messages, ...gated, ...sdk });
      expect(ran).toEqual(secret ? ['refund:o-6'] : []);
    }
  });

  it('does not take an ask as approved when the messages hold no approval for that call', async () => {
    const { registry, ran } = setUp();
    const { tools } = createAiSdkTools(registry, { context });
    const refund = tools['refund']!;
    await expect(
      Promise.resolve(refund.execute!({ order: 'o-4', amount: 10 }, { toolCallId: 'forged', messages: [], context: {} })),
    ).rejects.toThrow(/approval was required/);
    expect(ran).toEqual([]);
  });

  it('validates its options', () => {
    expect(() => createAiSdkTools({} as ToolRegistry)).toThrow(TypeError);
    expect(() => createAiSdkTools(new ToolRegistry(), { context: 3 as never })).toThrow(/option "context"/);
  });
});
