// The round of a 2026-07-28 request's asks is made lazily, when the call first asks (modern-binding.ts,
// approvers.ts): here its making throws (mrtr.ts's mrtrRound replaced), over real HTTP with the fast path on
// and off. An asked call must fail closed (not run, no input_required, no state); a call that asks nothing
// still runs; the peer the session handlers hold is not thenable and has nothing beyond its members. Each test
// FAILS when the attack gets through.
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import type { GatewayAuditRecord } from '../../src/gateway/index.js';
import type * as Mrtr from '../../src/gateway/mrtr.js';
import { MemoryLedger, MemoryNonceStore } from '../../src/stores/memory.js';
import { cleanupsAfterEach, fastPathFor, gatewayOverHttp, modernRequest } from '../harness.js';
import { modernUpstreamPolicy } from './fixtures/modern-fast.js';

const failing = vi.hoisted(() => ({ on: false, made: 0 }));

vi.mock('../../src/gateway/mrtr.js', async (importOriginal) => {
  const original = await importOriginal<typeof Mrtr>();
  return {
    ...original,
    mrtrRound: (request: Parameters<typeof original.mrtrRound>[0]) => {
      failing.made++;
      if (failing.on) throw new Error('the round could not be made');
      return original.mrtrRound(request);
    },
  };
});

const { ModernBinding, ModernRequest } = await import('../../src/gateway/modern-binding.js');
const { roundOf } = await import('../../src/gateway/mrtr.js');

const cleanups = cleanupsAfterEach();
const SECRET = 'atk-modern-round-fails-secret-0123456789';
const FORM = { elicitation: { form: {} } };
let ids = 1;

async function gateway(fast: boolean) {
  const { policy, ledger } = await modernUpstreamPolicy(cleanups, 'atk-modern-round-fails', {
    name: 'many',
    tool: 'mod:fail',
    max: 1000,
  });
  const records: GatewayAuditRecord[] = [];
  fastPathFor(cleanups, fast);
  const on = await gatewayOverHttp(cleanups, policy, {
    gateway: () => ({
      requestState: { secret: SECRET, nonces: new MemoryNonceStore(), ledger: new MemoryLedger() },
      audit: (record: GatewayAuditRecord) => void records.push(record),
    }),
    http: () => ({
      audience: false,
      authenticate: async (token: string) => ({ token, clientId: token, scopes: ['mod:echo', 'mod:pay'] }),
    }),
  });
  return { ...on, records, ledger, paid: () => readFileSync(ledger, 'utf8').split('\n').filter(Boolean) };
}

const pay = (url: URL, args: Record<string, unknown>, retry: Record<string, unknown> = {}) =>
  modernRequest<{ result?: Record<string, unknown>; error?: { code: number; message: string } }>(
    url,
    'tools/call',
    { name: 'mod:pay', arguments: args, ...retry },
    { token: 'mallory', capabilities: FORM, id: ids++ },
  ).then((a) => a.body);

describe('a 2026-07-28 round that cannot be made', { timeout: 180_000 }, () => {
  it('an asked call fails closed (runs nothing, answers no state); a call that asks nothing runs without a round', async () => {
    for (const fast of [true, false]) {
      const { url, paid, ledger, records } = await gateway(fast);
      // Warm (the modern handler is made on the first request), with a working round: a state to retry with.
      failing.on = false;
      const asked = await pay(url, { to: 'later', amount: 70 });
      const state = (asked.result as { requestState?: string } | undefined)?.requestState;
      expect(state, JSON.stringify(asked)).toBeDefined();
      writeFileSync(ledger, '');
      records.length = 0;
      failing.on = true;
      failing.made = 0;
      const answers = await Promise.all([
        pay(url, { to: 'asked', amount: 70 }),
        pay(
          url,
          { to: 'later', amount: 70 },
          {
            requestState: state,
            inputResponses: {
              'toolgate.approval': { action: 'accept', content: { approve: true } },
            },
          },
        ),
        pay(url, { to: 'small', amount: 5 }),
      ]);
      const [ask, retry, small] = answers;
      for (const answer of [ask, retry]) {
        expect(JSON.stringify(answer), `fast ${fast}`).not.toContain('paid');
        expect(JSON.stringify(answer), `fast ${fast}`).not.toContain('input_required');
        expect(JSON.stringify(answer), `fast ${fast}`).not.toContain('requestState');
      }
      // Nothing asked: no round made, the call runs.
      expect(JSON.stringify(small), `fast ${fast}`).toContain('paid 5 to small');
      expect(failing.made, `fast ${fast}`).toBe(2);
      expect(paid(), `fast ${fast}`).toEqual(['small:5']);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const pays = records.filter((r) => r.type === 'tool') as unknown as {
        decision: { effect: string; parameters: { to: string } };
      }[];
      for (const record of pays)
        expect(record.decision.effect, JSON.stringify(record)).toBe(
          record.decision.parameters.to === 'small' ? 'allow' : 'deny',
        );
      failing.on = false;
      // The state was not spent by the failed round: it still runs the call it binds, once.
      const ran = await pay(
        url,
        { to: 'later', amount: 70 },
        {
          requestState: state,
          inputResponses: {
            'toolgate.approval': { action: 'accept', content: { approve: true } },
          },
        },
      );
      expect(JSON.stringify(ran)).toContain('paid 70 to later');
    }
  });

  it('the peer is not thenable, has only its members, and its round is its own request’s', async () => {
    const core = {
      name: 'gw',
      people: { requestState: undefined, inbox: undefined },
      inForce: { current: { policy: { version: 'v1' } } },
      audit: () => undefined,
    } as never;
    const binding = new ModernBinding(core, () => ({}) as never);
    const a = new ModernRequest(binding, { tasks: false }, undefined);
    const b = new ModernRequest(binding, { tasks: false }, undefined);
    // Awaiting the peer gives the peer (a `then` would make every await of it a call into it).
    expect(await Promise.resolve(a.peer)).toBe(a.peer);
    for (const member of ['request', 'listRoots', 'ping', 'sendLoggingMessage', 'connect', 'toJSON'])
      expect(() => (a.peer as unknown as Record<string, unknown>)[member], member).toThrow(/not available/);
    // The handler is shared, the target is not: one request's peer never reads another's state.
    expect((a.peer as unknown as { state: unknown }).state).toBe(a);
    expect((b.peer as unknown as { state: unknown }).state).toBe(b);
  });

  it('a round made at the ask binds the policy in force when its request began: a reload before the ask spends nothing', async () => {
    failing.on = false;
    const inForce = { current: { policy: { version: 'v1' } } };
    const stores = { secret: Buffer.from(SECRET), nonces: new MemoryNonceStore(), ledger: new MemoryLedger() };
    const core = {
      name: 'gw',
      people: { requestState: stores, inbox: undefined },
      inForce,
      audit: () => undefined,
    } as never;
    const binding = new ModernBinding(
      core,
      () =>
        ((r: { authInfo?: { clientId: string } }) => ({
          caller: { id: r.authInfo?.clientId ?? 'nobody' },
        })) as never,
    );
    const ask = {
      toolName: 'mod:pay',
      parameters: { to: 'x', amount: 70 },
      reason: 'a person approves',
      ruleName: 'ask',
      metadata: {} as never,
      callId: 'c',
      agent: 'agent',
      tenant: null,
      runId: null,
    };
    const ctxOf = (requestState?: string, inputResponses?: Record<string, unknown>) =>
      ({
        sessionId: undefined,
        mcpReq: {
          id: 1,
          method: 'tools/call',
          envelope: { 'io.modelcontextprotocol/clientCapabilities': FORM },
          requestState: () => requestState,
          inputResponses,
          signal: new AbortController().signal,
          notify: async () => undefined,
        },
        http: { authInfo: { clientId: 'mallory', token: 'mallory', scopes: [] } },
      }) as never;
    const asked: string[] = [];
    // The policy reloads after the request began, before its ask: the round, made at the ask, binds v1.
    const first = new ModernRequest(binding, { tasks: false }, undefined);
    const answer = (await binding.rounded(
      first,
      ctxOf(),
      { method: 'tools/call', name: 'mod:pay', args: ask.parameters },
      async () => {
        inForce.current = { policy: { version: 'v2' } };
        asked.push(String(await roundOf(first.peer)!.ask('tool', ask, 'Allow?', () => undefined)));
        return { content: [{ type: 'text', text: 'refused: asked' }] };
      },
    )) as { requestState?: string };
    expect(asked).toEqual(['deny']);
    const state = answer.requestState!;
    const bound = JSON.parse(Buffer.from(state, 'base64url').toString('utf8')) as {
      binding: { policyVersion: string };
    };
    expect(bound.binding.policyVersion).toBe('v1');
    // Its retry under v2 is refused before anything runs, and its nonce is not spent by the refusal.
    const retry = new ModernRequest(binding, { tasks: false }, undefined);
    const accepted = { 'toolgate.approval': { action: 'accept', content: { approve: true } } };
    let ran = false;
    await expect(
      binding.rounded(
        retry,
        ctxOf(state, accepted),
        { method: 'tools/call', name: 'mod:pay', args: ask.parameters },
        async () => {
          if ((await roundOf(retry.peer)!.ask('tool', ask, 'Allow?', () => undefined)) === 'allow') ran = true;
          return { content: [{ type: 'text', text: ran ? 'ran' : 'refused' }] };
        },
      ),
    ).rejects.toThrow(/policy version "v1" and "v2"/);
    expect(ran).toBe(false);
    // Back under v1 (the same policy again), the same state runs its call once: the refusal spent nothing.
    inForce.current = { policy: { version: 'v1' } };
    const again = new ModernRequest(binding, { tasks: false }, undefined);
    await binding.rounded(
      again,
      ctxOf(state, accepted),
      { method: 'tools/call', name: 'mod:pay', args: ask.parameters },
      async () => {
        if ((await roundOf(again.peer)!.ask('tool', ask, 'Allow?', () => undefined)) === 'allow') ran = true;
        return { content: [{ type: 'text', text: ran ? 'ran' : 'refused' }] };
      },
    );
    expect(ran).toBe(true);
  });
});
