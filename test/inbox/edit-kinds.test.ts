/**
 * Edited arguments belong to a tool call only: a held reload (its parameters are the policy diff), a resource
 * read or a prompt get is answered as asked. The card offers no edit form for them, and an answer that edits
 * them anyway is refused — nothing is recorded for it.
 */
import { describe, expect, it } from 'vitest';
import { bindingOf } from '../../src/gate/index.js';
import type { ApprovalKind } from '../../src/contracts/approval.js';
import { answer, bearer, startInbox } from './fixture.js';
import { cleanupsAfterEach } from '../harness.js';

const cleanups = cleanupsAfterEach({ strict: true });

const APPROVER = 'ops@acme.example';

async function submitted(kind: ApprovalKind, id: string, parameters: Record<string, unknown>) {
  const { inbox, url } = await startInbox(cleanups);
  const tool = kind === 'reload' ? 'policy-v2' : kind === 'resource' ? 'file:///srv/report' : 'refund';
  const binding = bindingOf({
    kind,
    owner: { kind: 'session', id: 'gw' },
    agent: kind === 'reload' ? null : 'gateway',
    callId: `c-${id}`,
    tool,
    args: parameters,
    rule: 'r',
    policyVersion: 'v1',
    caller: 'cy',
    tenant: null,
  });
  const answers: unknown[] = [];
  await inbox.submit(
    {
      id,
      kind,
      binding,
      toolName: tool,
      canonical: tool,
      parameters,
      agent: 'gateway',
      tenant: null,
      caller: 'cy',
      runId: null,
      rule: 'r',
      reason: 'asks',
      source: 'gateway',
    },
    (record) => answers.push(record.answer),
  );
  return { inbox, url, answers };
}

describe('edited arguments are for tool calls only', () => {
  for (const kind of ['reload', 'resource'] as const)
    it(`a ${kind} approval has no edit form, and an edited answer is refused (400), nothing recorded`, async () => {
      const { inbox, url, answers } = await submitted(kind, `A-${kind}`, { changes: ['widen'] });
      const page = await (
        await fetch(`${url}/`, { headers: { authorization: `Bearer ${await bearer(APPROVER)}` } })
      ).text();
      expect(page).toContain(`A-${kind}`);
      expect(page).not.toContain('Approve with edited arguments');
      const res = await answer(url, `A-${kind}`, APPROVER, { effect: 'allow', arguments: '{"changes":[]}' });
      expect(res.status).toBe(400);
      expect(await res.text()).toContain('has no arguments to edit');
      expect((await inbox.store.get(`A-${kind}`))?.status).toBe('pending');
      expect(answers).toEqual([]);
    });

  it('a tool approval keeps its edit form and takes edited arguments', async () => {
    const { inbox, url, answers } = await submitted('tool', 'A-tool', { amount: 400 });
    const page = await (
      await fetch(`${url}/`, { headers: { authorization: `Bearer ${await bearer(APPROVER)}` } })
    ).text();
    expect(page).toContain('Approve with edited arguments');
    const res = await answer(url, 'A-tool', APPROVER, { effect: 'allow', arguments: '{"amount":300}' });
    expect(res.status).toBe(200);
    expect((await inbox.store.get('A-tool'))?.status).not.toBe('pending');
    expect(answers).toHaveLength(1);
  });
});
