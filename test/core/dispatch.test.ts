/**
 * The one dispatch path and its Route seam (src/gate/): what every route (registry, runner, adapters,
 * gateway) relies on. Routes are internal, so these tests drive dispatchCalls with hand-made routes over a
 * real ToolRegistry's environment.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { readCall, type ToolCallInput } from '../../src/formats/index.js';
import { hashOf, secretOf } from '../../src/crypto.js';
import { bindingOf, requestIdOf, sameBinding, signAnswer, verifyAnswer } from '../../src/gate/approval.js';
import type { ApprovalRequest, AskOutcome } from '../../src/contracts/approval.js';
import { decideCalls, dispatchCalls, previewCall, type DispatchResult } from '../../src/gate/dispatch.js';
import { environmentOf } from '../../src/gate/environment.js';
import type { GateContext } from '../../src/contracts/gate.js';
import type { Route, RoutePerson } from '../../src/contracts/route.js';
import { PermissionPolicy, ToolRegistry, type RegistryEvent, type ToolResult } from '../../src/index.js';
import { MemoryNonceStore } from '../../src/stores/memory.js';

const memoryNonces = () => new MemoryNonceStore();
/** The route owner's approval key (a route with a person has one). */
const SECRET = new TextEncoder().encode('the route owner secret');

function setUp() {
  const ran: string[] = [];
  const registry = new ToolRegistry({ handlerTimeoutMs: 50, confusables: 'off' });
  registry.register({
    name: 'refund',
    parameters: z.object({ order: z.string() }),
    execute: ({ order }) => void ran.push(`refund:${String(order)}`),
  });
  registry.register({
    name: 'search',
    parameters: { type: 'object' },
    metadata: { concurrencySafe: true },
    execute: () => void ran.push('search'),
  });
  registry.setPermissionPolicy(
    new PermissionPolicy({
      rules: [
        { name: 'refunds', tools: ['refund'], result: 'ask', reason: 'refunds need a person' },
        { name: 'search', tools: ['search'], result: 'allow' },
      ],
      version: 'p1',
    }),
  );
  const events: RegistryEvent[] = [];
  registry.onChange((e) => void events.push(e));
  return { registry, ran, events };
}

const refund = (order = 'o-1', id = 'c1'): ToolCallInput => ({ id, name: 'refund', arguments: { order } });

function person(ask: RoutePerson['ask'], extra: Partial<Route> = {}): Route {
  return { name: 'adapter', grouped: false, person: { approvals: { secret: SECRET }, ask }, ...extra };
}

async function run(registry: ToolRegistry, calls: ToolCallInput[], route: Route, context: GateContext = {}) {
  return dispatchCalls(calls.map(readCall), context, environmentOf(registry), route);
}

const decisionOf = (result: DispatchResult | undefined) => (result as ToolResult).decision;

describe('the one precedence: policy handler → route person → registry handler → fallback', () => {
  it("a route's person answers after the policy's handler and before the registry's, recorded under the route's name", async () => {
    const { registry, ran } = setUp();
    registry.setPermissionHandler(() => 'deny');
    const [allowed] = await run(
      registry,
      [refund()],
      person(() => ({ effect: 'allow' }), { name: 'gateway' }),
    );
    expect(decisionOf(allowed)).toMatchObject({ effect: 'allow', by: 'handler', asked: 'gateway', rule: 'refunds' });
    expect(ran).toEqual(['refund:o-1']);
    // null: no person for this request — the registry's handler decides.
    const [passed] = await run(
      registry,
      [refund()],
      person(() => null),
    );
    expect(decisionOf(passed)).toMatchObject({ effect: 'deny', asked: 'registry' });
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [{ name: 'refunds', tools: ['refund'], result: 'ask' }], handler: () => 'deny' }),
    );
    const [policy] = await run(
      registry,
      [refund()],
      person(() => ({ effect: 'allow' })),
    );
    expect(decisionOf(policy)).toMatchObject({ effect: 'deny', asked: 'policy' });
    expect(ran).toEqual(['refund:o-1']);
  });

  it.each<[string, RoutePerson['ask'], string]>([
    [
      'throws',
      () => {
        throw new Error('the UI crashed');
      },
      'handler_error',
    ],
    ['times out', () => new Promise<never>(() => undefined), 'handler_timeout'],
    ['answers a string', () => 'allow' as never, 'handler_invalid'],
    ['answers an unknown effect', () => ({ effect: 'ask' }) as never, 'handler_invalid'],
    ['edits the arguments of a deny', () => ({ effect: 'deny', arguments: {} }) as never, 'handler_invalid'],
    ['denies', () => ({ effect: 'deny', reason: 'not today' }), 'handler'],
    [
      'presents an approval that does not verify',
      () => ({ effect: 'invalid', reason: 'the MAC is wrong' }),
      'approval_invalid',
    ],
  ])('a person who %s denies and nothing runs', async (_what, ask, by) => {
    const { registry, ran } = setUp();
    const [result] = await run(registry, [refund()], person(ask));
    expect(result!.status).toBe('refused');
    expect(decisionOf(result)).toMatchObject({ effect: 'deny', stage: 'handler', by, asked: 'adapter' });
    expect(ran).toEqual([]);
  });

  it("a deny's reason reaches the model; an invalid approval names what failed", async () => {
    const { registry } = setUp();
    const [denied] = await run(
      registry,
      [refund()],
      person(() => ({ effect: 'deny', reason: 'not today' })),
    );
    expect((denied as ToolResult).content).toMatch(/the approver denied the call: not today/);
    const [invalid] = await run(
      registry,
      [refund()],
      person(() => ({ effect: 'invalid', reason: 'it expired' })),
    );
    expect(decisionOf(invalid).reason).toMatch(/it expired, so the call is denied/);
  });

  it("'pending' from a registry handler still denies (only a route's person may leave an ask pending)", async () => {
    const { registry, ran } = setUp();
    registry.setPermissionHandler(() => 'pending' as never);
    const result = await registry.invoke('refund', { order: 'o-1' });
    expect(ran).toEqual([]);
    expect(result.decision).toMatchObject({ effect: 'deny', stage: 'handler', by: 'handler_invalid' });
  });
});

describe('pending: nothing of the batch runs or is announced', () => {
  it('returns the request for the pending call and not_run for the others', async () => {
    const { registry, ran, events } = setUp();
    const requests: ApprovalRequest[] = [];
    const route = person((request) => {
      requests.push(request);
      return { effect: 'pending' };
    });
    const results = await run(registry, [{ id: 's', name: 'search', arguments: {} }, refund()], route, {
      runId: 'R1',
    });
    expect(results.map((r) => r.status)).toEqual(['not_run', 'pending']);
    expect(ran).toEqual([]);
    expect(events.map((e) => e.type)).toEqual(['permission_asked']);
    const request = requests[0]!;
    expect(results[1]).toMatchObject({ status: 'pending', callId: 'c1', request });
    expect(request).toMatchObject({
      toolName: 'refund',
      canonical: 'refund',
      parameters: { order: 'o-1' },
      runId: 'R1',
      rule: 'refunds',
      reason: 'refunds need a person',
      binding: {
        kind: 'tool',
        owner: { kind: 'run', id: 'R1' },
        callId: 'c1',
        tool: 'refund',
        rule: 'refunds',
        policyVersion: 'p1',
        pin: null,
        caller: null,
        tenant: null,
      },
    });
    expect(request.binding.argsHash).toMatch(/^[0-9a-f]{64}$/);
    expect(Object.isFrozen(request.parameters)).toBe(true);
  });
});

describe('edited arguments pass the whole gate again', () => {
  it('an allow with edited arguments runs the edited call; an ask on exactly them is the approval', async () => {
    const { registry, ran } = setUp();
    const [result] = await run(
      registry,
      [refund('o-1')],
      person(() => ({ effect: 'allow', arguments: { order: 'o-2' } })),
    );
    expect(decisionOf(result)).toMatchObject({ effect: 'allow', asked: 'adapter', parameters: { order: 'o-2' } });
    expect(ran).toEqual(['refund:o-2']);
  });

  it('edited arguments the schema refuses are refused', async () => {
    const { registry, ran } = setUp();
    const [result] = await run(
      registry,
      [refund('o-1')],
      person(() => ({ effect: 'allow', arguments: { order: 7 } })),
    );
    expect(decisionOf(result)).toMatchObject({ effect: 'deny', stage: 'validation' });
    expect(ran).toEqual([]);
  });
});

describe('charge, halt, endsBatch, decided, execute', () => {
  it('charges every call in order (refused ones too); a refusal denies at its stage and halt stops the rest', async () => {
    const { registry, ran } = setUp();
    const charged: string[] = [];
    const told: string[] = [];
    const route: Route = {
      name: 'runner',
      grouped: false,
      meter: {
        charge: ({ call, decision }) => {
          charged.push(`${call.name}:${decision.effect}`);
          return charged.length === 3 ? { stage: 'budget', reason: 'maxToolCalls (2) is spent', halt: true } : null;
        },
      },
      observe: { decided: (decision) => void told.push(`${decision.tool}:${decision.effect}:${decision.stage}`) },
    };
    const results = await run(
      registry,
      [
        { id: 'a', name: 'search', arguments: {} },
        { id: 'b', name: 'nope', arguments: {} },
        { id: 'c', name: 'search', arguments: {} },
        { id: 'd', name: 'search', arguments: {} },
      ],
      route,
    );
    expect(results.map((r) => r.status)).toEqual(['ok', 'refused', 'refused', 'not_run']);
    expect(charged).toEqual(['search:allow', 'nope:deny', 'search:allow']);
    expect(told).toEqual(['search:allow:policy', 'nope:deny:lookup', 'search:deny:budget']);
    expect(decisionOf(results[2])).toMatchObject({
      stage: 'budget',
      by: 'budget',
      reason: 'maxToolCalls (2) is spent',
    });
    expect(ran).toEqual(['search']);
  });

  it('endsBatch: the ending call is charged, announced and refused; nothing of the batch runs', async () => {
    const { registry, ran, events } = setUp();
    const route: Route = {
      name: 'runner',
      grouped: false,
      observe: { endsBatch: (decision) => decision.effect === 'deny' && decision.stage === 'lookup' },
    };
    const results = await run(
      registry,
      [
        { name: 'search', arguments: {} },
        { name: 'nope', arguments: {} },
      ],
      route,
    );
    expect(results.map((r) => r.status)).toEqual(['not_run', 'refused']);
    expect(ran).toEqual([]);
    expect(events.filter((e) => e.type === 'tool_decided')).toHaveLength(1);
  });

  it('a route that executes a call itself (a peer agent) gets the decided snapshot; proceed runs the tool', async () => {
    const { registry, ran } = setUp();
    const seen: unknown[] = [];
    const route: Route = {
      name: 'runner',
      grouped: false,
      person: { approvals: { secret: SECRET }, ask: () => ({ effect: 'allow' }) },
      execute: (call, _signal, proceed) => {
        if (call.tool.name !== 'refund') return proceed();
        seen.push(call.args);
        return Promise.resolve({
          callId: call.decision.callId,
          tool: call.decision.tool,
          status: 'ok',
          isError: false,
          content: 'done by the peer',
          decision: call.decision,
        });
      },
    };
    const results = await run(registry, [refund(), { name: 'search', arguments: {} }], route);
    expect(results.map((r) => (r as ToolResult).content)).toEqual(['done by the peer', '']);
    expect(seen).toEqual([{ order: 'o-1' }]);
    expect(Object.isFrozen(seen[0])).toBe(true);
    expect(ran).toEqual(['search']);
  });

  it('refresh: a call that waited is decided again under the context the route reads now', async () => {
    const { registry, ran } = setUp();
    let tenantTools: readonly string[] = ['refund', 'search'];
    const env = environmentOf(registry);
    const contextNow = (): GateContext => ({ tenant: { id: 't', tools: tenantTools } });
    const route: Route = {
      name: 'runner',
      grouped: false,
      refresh: contextNow,
      execute: (call, _signal, proceed) => {
        if (call.tool.name === 'search') tenantTools = ['search']; // the plan is revoked while an earlier call runs
        return proceed();
      },
      person: { approvals: { secret: SECRET }, ask: () => ({ effect: 'allow' }) },
    };
    const results = await dispatchCalls(
      [readCall({ name: 'search', arguments: {} }), readCall(refund())],
      contextNow(),
      env,
      route,
    );
    expect(results.map((r) => r.status)).toEqual(['ok', 'refused']);
    expect(decisionOf(results[1])).toMatchObject({ stage: 'allowlist', layer: 'tenant' });
    expect(ran).toEqual(['search']);
  });

  it('grouped routes run consecutive concurrency-safe calls together; sequential routes one at a time', async () => {
    for (const grouped of [true, false]) {
      const registry = new ToolRegistry();
      const log: string[] = [];
      registry.register({
        name: 'slow',
        parameters: { type: 'object' },
        metadata: { concurrencySafe: true },
        execute: async () => {
          log.push('slow start');
          await new Promise((resolve) => setTimeout(resolve, 20));
          log.push('slow end');
        },
      });
      registry.register({
        name: 'fast',
        parameters: { type: 'object' },
        metadata: { concurrencySafe: true },
        execute: () => void log.push('fast'),
      });
      await run(
        registry,
        [
          { name: 'slow', arguments: {} },
          { name: 'fast', arguments: {} },
        ],
        {
          name: 'registry',
          grouped,
        },
      );
      expect(log, String(grouped)).toEqual(
        grouped ? ['slow start', 'fast', 'slow end'] : ['slow start', 'slow end', 'fast'],
      );
    }
  });
});

describe('decideCalls and previewCall', () => {
  it('previewCall emits nothing and resolves no ask; decideCalls announces once and executes nothing', async () => {
    const { registry, ran, events } = setUp();
    const env = environmentOf(registry);
    const pre = await previewCall(readCall(refund()), {}, env);
    expect(pre.kind).toBe('ask');
    expect(events).toEqual([]);
    const [decision] = await decideCalls(
      [readCall(refund())],
      {},
      env,
      person(() => ({ effect: 'deny' })),
    );
    expect(decision).toMatchObject({ effect: 'deny', asked: 'adapter' });
    expect(events.map((e) => e.type)).toEqual(['permission_asked', 'permission_denied', 'tool_decided']);
    expect(ran).toEqual([]);
  });
});

describe('signed answers: bound to the exact call, single use', () => {
  const secret = new TextEncoder().encode('a secret of at least 16 bytes');

  async function pendingRequest(registry: ToolRegistry, order = 'o-1', runId = 'R1'): Promise<ApprovalRequest> {
    let request: ApprovalRequest | undefined;
    await run(
      registry,
      [refund(order)],
      {
        name: 'adapter',
        grouped: false,
        person: {
          approvals: { secret },
          ask: (r) => {
            request = r;
            return { effect: 'pending' };
          },
        },
      },
      { runId },
    );
    return request!;
  }

  it('an answer signed for the request verifies once; replayed, it is refused', async () => {
    const { registry } = setUp();
    const request = await pendingRequest(registry);
    const nonces = memoryNonces();
    const signed = signAnswer(secret, request, { effect: 'allow', approver: 'ann' });
    const again = await pendingRequest(registry); // the call dispatched again: a new request, the same binding
    expect(await verifyAnswer(secret, signed, again, nonces)).toEqual({ effect: 'allow', approver: 'ann' });
    expect(await verifyAnswer(secret, signed, again, nonces)).toEqual({
      effect: 'invalid',
      reason: 'the approval was already used',
    });
  });

  it.each<[string, (request: ApprovalRequest) => unknown, RegExp]>([
    [
      'altered',
      (r) => ({ ...signAnswer(secret, r, { effect: 'deny' }), answer: { effect: 'allow' } }),
      /not signed by this gate or was altered/,
    ],
    [
      'signed with another key',
      (r) => signAnswer(new TextEncoder().encode('another secret of 16+ bytes'), r, { effect: 'allow' }),
      /not signed/,
    ],
    ['not an answer', () => 'allow', /not a signed answer/],
  ])('an answer %s is invalid', async (_what, make, reason) => {
    const { registry } = setUp();
    const request = await pendingRequest(registry);
    const outcome: AskOutcome = await verifyAnswer(secret, make(request), request, memoryNonces());
    expect(outcome).toMatchObject({ effect: 'invalid', reason: expect.stringMatching(reason) });
  });

  it('an answer for other arguments, another run, another policy version, or past its expiry is invalid', async () => {
    const { registry } = setUp();
    const request = await pendingRequest(registry, 'o-1', 'R1');
    const signed = signAnswer(secret, request, { effect: 'allow' });
    const nonces = memoryNonces();
    expect(await verifyAnswer(secret, signed, await pendingRequest(registry, 'o-9', 'R1'), nonces)).toMatchObject({
      reason: 'the approval was given for other arguments',
    });
    // The session "run:R1" is not the run R1: the kinds never collide.
    const session = { ...request, binding: { ...request.binding, owner: { kind: 'session' as const, id: 'run:R1' } } };
    expect(await verifyAnswer(secret, signed, session, nonces)).toMatchObject({
      reason: 'the approval was given for another run or session',
    });
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [{ name: 'refunds', tools: ['refund'], result: 'ask' }], version: 'p2' }),
    );
    expect(await verifyAnswer(secret, signed, await pendingRequest(registry), nonces)).toMatchObject({
      reason: expect.stringMatching(/policy version "p1" and "p2" is in force/),
    });
    expect(await verifyAnswer(secret, signed, request, nonces, request.binding.expiresAt + 1)).toMatchObject({
      reason: expect.stringMatching(/expired/),
    });
  });
});

describe('the one binding: minted one way, compared by one sameBinding', () => {
  it('a route with a person and no secret of its owner is refused before anything is decided', async () => {
    const { registry, ran, events } = setUp();
    const ask = (): AskOutcome => ({ effect: 'allow' });
    const route = { name: 'gateway', grouped: false, person: { ask } } as unknown as Route;
    await expect(run(registry, [refund()], route)).rejects.toThrow(/option "approvals\.secret"/);
    const short: Route = { name: 'gateway', grouped: false, person: { approvals: { secret: new Uint8Array(8) }, ask } };
    await expect(run(registry, [refund()], short)).rejects.toThrow(/got 8 bytes/);
    expect(ran).toEqual([]);
    expect(events).toEqual([]);
  });

  it('the id is a MAC under the owner secret: two workers with one secret mint ids that verify on either', async () => {
    const { registry } = setUp();
    const ids: string[] = [];
    const route = person((request) => {
      ids.push(request.id);
      expect(request.id).toBe(requestIdOf(SECRET, request.binding));
      return { effect: 'pending' };
    });
    await run(registry, [refund()], route, { runId: 'R1' });
    expect(ids).toHaveLength(1);
  });

  it('sameBinding names what differs, or answers null for the very call', () => {
    const want = bindingOf({
      owner: { kind: 'run', id: 'R1' },
      agent: 'agent',
      callId: 'c1',
      tool: 'refund',
      args: { order: 'o-1' },
      rule: 'refunds',
      policyVersion: 'p1',
      caller: 'cy',
      tenant: 'acme',
    });
    // Another nonce and expiry, the same call: the same binding (verifyAnswer checks expiry and nonce).
    expect(sameBinding({ ...want, nonce: 'other', expiresAt: 1 }, want)).toBeNull();
    expect(sameBinding({ ...want, kind: 'resource' }, want)).toMatch(/resource request/);
    expect(sameBinding({ ...want, owner: { kind: 'session', id: 'R1' } }, want)).toMatch(/another run or session/);
    expect(sameBinding({ ...want, agent: 'other' }, want)).toMatch(/for agent "other" and agent "agent" asks now/);
    expect(sameBinding({ ...want, callId: 'c2' }, want)).toMatch(/another call/);
    expect(sameBinding({ ...want, tool: 'search' }, want)).toMatch(/another tool/);
    expect(sameBinding({ ...want, argsHash: hashOf({ order: 'o-2' }) }, want)).toMatch(/other arguments/);
    expect(sameBinding({ ...want, rule: 'other' }, want)).toMatch(/under rule "other"/);
    expect(sameBinding({ ...want, policyVersion: 'p2' }, want)).toMatch(/policy version "p2"/);
    expect(sameBinding({ ...want, pin: 'abc' }, want)).toMatch(/pin changed/);
    expect(sameBinding({ ...want, caller: 'mallory' }, want)).toMatch(/another caller/);
    expect(sameBinding({ ...want, tenant: 'globex' }, want)).toMatch(/another tenant/);
    expect(sameBinding('a string', want)).toMatch(/not bound/);
  });

  it('secretOf is the one secret parser: a string or bytes of at least 16, never echoed', () => {
    expect(secretOf('a secret of sixteen+', 'option "s"')).toHaveLength(20);
    const bytes = new Uint8Array(16).fill(7);
    const copy = secretOf(bytes, 'option "s"');
    bytes.fill(0);
    expect(copy[0]).toBe(7); // a private copy
    expect(() => secretOf('hunter2', 'option "s"')).toThrow(
      'option "s" must be a string or bytes of at least 16 bytes, got a string of 7 bytes',
    );
    expect(() => secretOf(undefined, 'option "s"')).toThrow(/got undefined$/);
    try {
      secretOf('hunter2', 'x');
    } catch (error) {
      expect(String(error)).not.toContain('hunter2');
    }
  });
});
