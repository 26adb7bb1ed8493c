// The 2026-07-28 handlers are bound once per modern handler (src/gateway/modern-binding.ts, issue 25): what a
// request holds of its own (its context, authentication, signal, the upstream request it refused, its round of
// asks) is in its ModernRequest alone. Two callers' requests interleaved on one binding each see only their
// own, through every way the session handlers read it: the peer ("the client's server"), the session request,
// the caller's context, the round. Each test FAILS when one request sees the other's.
import type { ServerContext } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import type { GateContext } from '../../src/contracts/gate.js';
import { ModernBinding, ModernRequest } from '../../src/gateway/modern-binding.js';
import { inRound, roundOf, type MrtrRound } from '../../src/gateway/mrtr.js';
import type { GatewayCore, GatewayRequestContext } from '../../src/gateway/session.js';

const CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
const LEVEL = 'io.modelcontextprotocol/logLevel';

/** A gateway core with what the binding reads of it: no stores, a policy version, an audit that keeps records. */
function core(audited: unknown[] = []): GatewayCore {
  return {
    name: 'gw',
    people: { requestState: undefined, inbox: undefined },
    inForce: { current: { policy: { version: 'v1' } } },
    audit: (record: unknown) => audited.push(record),
  } as unknown as GatewayCore;
}

/** The context of a request: its caller is the token's client (a per-request context, as http.ts gives one). */
const perCaller = (): GatewayRequestContext => (request) =>
  ({ caller: { id: request.authInfo?.clientId ?? 'nobody' } }) as GateContext;

/** One caller's handler context: its token, its declared capabilities, its log level, its own signal and sink. */
function contextOf(who: string, level?: string) {
  const controller = new AbortController();
  const notified: unknown[] = [];
  const ctx = {
    sessionId: undefined,
    mcpReq: {
      id: 1,
      method: 'tools/call',
      _meta: undefined,
      envelope: { [CAPABILITIES]: { experimental: { who: {} } }, ...(level ? { [LEVEL]: level } : {}) },
      requestState: () => undefined,
      signal: controller.signal,
      notify: async (notification: unknown) => void notified.push(notification),
    },
    http: { authInfo: { clientId: who, token: `token-${who}`, scopes: [] } },
  } as unknown as ServerContext;
  return { ctx, controller, notified };
}

describe('2026-07-28 requests on one binding (modern-binding.ts)', () => {
  it('two callers interleaved: each peer, session request, context, signal and round is its own', async () => {
    const binding = new ModernBinding(core(), perCaller);
    const alice = contextOf('alice', 'debug');
    const bob = contextOf('bob');
    const a = new ModernRequest(binding, { tasks: false }, undefined);
    const b = new ModernRequest(binding, { tasks: false }, undefined);
    expect(a.peer).not.toBe(b.peer);
    // Interleaved as concurrent requests run: each handler sets its own request's context.
    const ra = binding.of(a, alice.ctx);
    const rb = binding.of(b, bob.ctx);
    expect(ra.signal).toBe(alice.controller.signal);
    expect(rb.signal).toBe(bob.controller.signal);
    expect(ra.authInfo).toMatchObject({ clientId: 'alice' });
    expect(rb.authInfo).toMatchObject({ clientId: 'bob' });
    expect(ra.exchange).not.toBe(rb.exchange);
    expect(ra.logLevel).toBe('debug');
    expect(rb.logLevel).toBeUndefined();
    expect(a.handlers.contextOf(ra).caller?.id).toBe('alice');
    expect(b.handlers.contextOf(rb).caller?.id).toBe('bob');
    expect(a.current).toBe(alice.ctx);
    expect(b.current).toBe(bob.ctx);
    // One caller's client going away stops its request only.
    bob.controller.abort();
    expect(ra.signal.aborted).toBe(false);
    // A log line through alice's peer reaches alice (her level), none through bob's (he asked for none).
    await a.peer.notification({ method: 'notifications/message', params: { level: 'info', data: 'a' } } as never);
    await b.peer.notification({ method: 'notifications/message', params: { level: 'info', data: 'b' } } as never);
    expect(alice.notified).toHaveLength(1);
    expect(bob.notified).toHaveLength(0);
    // An upstream's sampling request refused for bob's request is bob's alone.
    await expect(b.peer.createMessage({} as never)).rejects.toThrow(/sampling/);
    expect(b.undeclared).toEqual({ what: 'sampling', declared: false });
    expect(a.undeclared).toBeUndefined();
    // Rounds: none outside a round (a 2025-era server has none either); each request's is its own, made once.
    expect(roundOf(a.peer)).toBeUndefined();
    expect(inRound(a.peer)).toBe(false);
    let made = 0;
    const roundA = { name: 'a' } as unknown as MrtrRound;
    const roundB = { name: 'b' } as unknown as MrtrRound;
    a.begin(() => (made++, roundA));
    b.begin(() => (made++, roundB));
    expect(a.made).toBeUndefined();
    // In a round, its round not made yet: only an ask (roundOf) makes it.
    expect(inRound(a.peer)).toBe(true);
    expect(inRound(b.peer)).toBe(true);
    expect(made).toBe(0);
    expect(roundOf(b.peer)).toBe(roundB);
    expect(roundOf(a.peer)).toBe(roundA);
    expect(roundOf(a.peer)).toBe(roundA);
    expect(made).toBe(2);
    expect(roundOf({})).toBeUndefined();
    expect(inRound({})).toBe(false);
  });

  it('concurrent rounds: each handler sees its own request throughout, an upstream refusal fails its own call only', async () => {
    const audited: unknown[] = [];
    const binding = new ModernBinding(core(audited), perCaller);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const run = (state: ModernRequest, ctx: ServerContext, who: string, refuse: boolean) =>
      binding.rounded(state, ctx, { method: 'tools/call', name: 'mod:echo', args: {} }, async () => {
        await gate;
        // After the other request ran meanwhile: this one's context, signal and caller are still its own.
        const request = binding.of(state, ctx);
        expect(state.current).toBe(ctx);
        expect(request.signal).toBe(ctx.mcpReq.signal);
        expect(state.handlers.contextOf(request).caller?.id).toBe(who);
        if (refuse) await state.peer.createMessage({} as never).catch(() => undefined);
        return { content: [{ type: 'text', text: who }] };
      });
    const requests = ['alice', 'bob', 'carol', 'dave'].map((who, i) => {
      const { ctx } = contextOf(who);
      const state = new ModernRequest(binding, { tasks: false }, undefined);
      return { who, state, answer: run(state, ctx, who, i % 2 === 1) };
    });
    release();
    for (const { who, state, answer } of requests) {
      if (who === 'bob' || who === 'dave') {
        await expect(answer).rejects.toThrow(/sampling/);
        expect(state.undeclared?.what).toBe('sampling');
      } else {
        await expect(answer).resolves.toEqual({ content: [{ type: 'text', text: who }] });
        expect(state.undeclared).toBeUndefined();
      }
      // Nothing asked: no round was made for the call (issue 25), none claimed it.
      expect(state.made).toBeUndefined();
    }
    expect(audited).toHaveLength(2);
  });
});
