/**
 * The AI SDK adapter's approvals are bound to the context (tenant, caller, agent) and the policy version:
 * the SDK signs with a key derived from approvalSecret for both (issue 10's attacker: an approval from one
 * tenant's conversation, or from under an earlier policy, ran the call).
 */
import { generateText, type ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAiSdkTools } from '../../src/adapters/ai-sdk/index.js';
import { PermissionPolicy, ToolRegistry } from '../../src/index.js';
import { scripted, textTurn, toolCallTurn } from './fixtures/ai-sdk-model.js';

const callTurn = (id: string, input: unknown) => toolCallTurn({ id, name: 'refund', input });

function setUp() {
  const ran: string[] = [];
  const registry = new ToolRegistry();
  registry.register({
    name: 'refund',
    description: 'Refund',
    parameters: z.object({ order: z.string(), amount: z.number() }),
    execute: ({ order }) => {
      ran.push(`refund:${order}`);
      return `refunded ${order}`;
    },
  });
  registry.setPermissionPolicy(
    new PermissionPolicy({ version: 'v1', rules: [{ name: 'refunds', tools: ['refund'], result: 'ask' }] }),
  );
  return { registry, ran };
}
const approvalSecret = 'one-server-wide-approval-secret-32b';

describe('ai-sdk: an approval counts only for the context and policy it was given under', () => {
  it('an approval given in the same context under the same policy counts (the control)', async () => {
    const { registry, ran } = setUp();
    const gated = createAiSdkTools(registry, {
      context: { agent: 'a', tenant: { id: 'acme', tools: ['refund'] } },
      approvalSecret,
    });
    const paused = await generateText({
      model: scripted(callTurn('c1', { order: 'o1', amount: 5 })),
      prompt: 'r',
      ...gated,
    });
    const req = paused.content.find((p) => p.type === 'tool-approval-request') as { approvalId: string };
    const messages: ModelMessage[] = [
      { role: 'user', content: 'r' },
      ...paused.response.messages,
      { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: req.approvalId, approved: true }] },
    ];
    await generateText({
      model: scripted(textTurn('ok')),
      messages,
      ...createAiSdkTools(registry, {
        context: { agent: 'a', tenant: { id: 'acme', tools: ['refund'] } },
        approvalSecret,
      }),
    });
    expect(ran).toEqual(['refund:o1']);
  });

  it('an approval given in tenant acme does not count in tenant globex (same server secret)', async () => {
    const { registry, ran } = setUp();
    const acme = createAiSdkTools(registry, {
      context: { agent: 'a', tenant: { id: 'acme', tools: ['refund'] }, caller: { id: 'alice' } },
      approvalSecret,
    });
    const globex = createAiSdkTools(registry, {
      context: { agent: 'a', tenant: { id: 'globex', tools: ['refund'] }, caller: { id: 'mallory' } },
      approvalSecret,
    });
    const paused = await generateText({
      model: scripted(callTurn('c1', { order: 'o1', amount: 5 })),
      prompt: 'r',
      ...acme,
    });
    const req = paused.content.find((p) => p.type === 'tool-approval-request') as { approvalId: string };
    const messages: ModelMessage[] = [
      { role: 'user', content: 'r' },
      ...paused.response.messages,
      { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: req.approvalId, approved: true }] },
    ];
    // The SDK itself refuses the signature on resume, or execute does: either way nothing runs.
    await generateText({ model: scripted(textTurn('ok')), messages, ...globex }).catch(() => undefined);
    expect(ran).toEqual([]);
  });

  it('an approval given under policy v1 does not count under policy v2 (another ask rule)', async () => {
    const { registry, ran } = setUp();
    const gated = createAiSdkTools(registry, { context: { agent: 'a' }, approvalSecret });
    const paused = await generateText({
      model: scripted(callTurn('c1', { order: 'o1', amount: 5 })),
      prompt: 'r',
      ...gated,
    });
    const req = paused.content.find((p) => p.type === 'tool-approval-request') as { approvalId: string };
    registry.setPermissionPolicy(
      new PermissionPolicy({ version: 'v2', rules: [{ name: 'cfo-must-approve', tools: ['refund'], result: 'ask' }] }),
    );
    const messages: ModelMessage[] = [
      { role: 'user', content: 'r' },
      ...paused.response.messages,
      { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: req.approvalId, approved: true }] },
    ];
    await generateText({ model: scripted(textTurn('ok')), messages, ...gated }).catch(() => undefined);
    expect(ran).toEqual([]);
  });
});
