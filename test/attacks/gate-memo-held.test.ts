/**
 * Attacks on the joint slot's memo (issue 25, src/gate/precheck.ts `toolIn` / `evaluationOf`: the tool the registry
 * found under a name and the policy's outcome for it, kept per joint slot) that held. On seeded runs, every call made
 * under steady layer arrays (joined: the memo answers) is decided and run as the same call under fresh copies of them
 * (never joined, nothing kept): with tools replaced, unregistered and policies set or removed between calls, between
 * the awaits of calls in flight (an async schema) and from inside a call (a schema, a handler, a layer's getter,
 * which also make nested calls that move the slot that answered step 4); one Tool object in two registries that
 * share the layers and take turns; a withTools route (the runner's) whose own tools come and go; more steady
 * contexts than joints are kept (eviction); ask rules with a handler; `match` / `select` / tag rules; a context
 * with an explicit allowlist. The trace compares each result, its Decision (rule, policy version, canonical name)
 * and which tool object ran.
 */
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import { jointsBuilt } from '../../src/allowlist-cache.js';
import { readCall } from '../../src/formats/index.js';
import { decideCalls, dispatchCalls, withTools } from '../../src/gate/index.js';
import {
  defineTool,
  PermissionPolicy,
  ToolAllowlist,
  ToolRegistry,
  type GateContext,
  type Tool,
  type ToolTag,
} from '../../src/index.js';

const TOOLS = ['search', 'refund', 'delete_all', 'crm:read', 'notes'];
const NAMES = [...TOOLS, 'Search', 'REFUND', 'ｓｅａｒｃｈ', 'nope', 'agent:peer', 'Agent:Peer'];

/** A result without what differs by construction (generated ids, durations). */
function comparable(result: unknown): unknown {
  return JSON.parse(
    JSON.stringify(result, (key, value: unknown) =>
      key === 'callId' || key === 'id' || key === 'durationMs' ? '·' : value,
    ),
  ) as unknown;
}

async function scenario(seed: number, steady: boolean): Promise<unknown[]> {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const trace: unknown[] = [];
  let version = 0;
  const registries = [new ToolRegistry(), new ToolRegistry()];
  let depth = 0;
  // User code in the middle of a call (a schema, a handler, a getter): a change of the registry or a nested call.
  const hook = async (where: string): Promise<void> => {
    if (depth > 1) return;
    const r = random();
    const registry = pick(registries);
    trace.push(['hook', where, r]);
    if (r < 0.15) {
      const name = pick(TOOLS);
      registry.unregister(name);
      registry.register(toolOf(name, version++));
    } else if (r < 0.25) registry.unregister(pick(TOOLS));
    else if (r < 0.35) {
      if (random() < 0.8) registry.setPermissionPolicy(policyOf(version++));
      else registry.removePermissionPolicy();
    } else if (r < 0.5) {
      depth++;
      try {
        trace.push(['nested', comparable(await registry.invoke(pick(NAMES), { amount: 1 }, contextOf()))]);
      } finally {
        depth--;
      }
    }
  };
  // Hooks started by synchronous user code, awaited before the trace is compared.
  const running: Promise<unknown>[] = [];
  const syncHook = (where: string): void => {
    running.push(hook(where).catch((error: unknown) => trace.push(['hook threw', String(error)])));
  };
  function toolOf(name: string, v: number): Tool {
    const kind = random();
    const standard = (async: boolean) => ({
      '~standard': {
        version: 1 as const,
        vendor: 'attack',
        validate: (value: unknown) => {
          if (!async) {
            if (random() < 0.1) syncHook(`validate ${name} v${v}`);
            return { value };
          }
          return (async () => {
            await Promise.resolve();
            if (random() < 0.3) await hook(`async validate ${name} v${v}`);
            return { value };
          })();
        },
      },
    });
    return defineTool({
      name,
      description: name,
      parameters:
        kind < 0.4
          ? { type: 'object', properties: { amount: { type: 'integer', minimum: 0 } } }
          : kind < 0.7
            ? standard(false)
            : standard(true),
      metadata: { tags: random() < 0.3 ? ['destructive'] : [] },
      execute:
        random() < 0.5
          ? async () => (trace.push(['ran', name, v]), `${name} v${v}`)
          : () => (trace.push(['ran', name, v]), `${name} v${v}`),
    });
  }
  function policyOf(v: number): PermissionPolicy {
    const rules = Array.from({ length: Math.floor(random() * 5) }, (_, i) => {
      const above = random() < 0.3 ? Math.floor(random() * 3) : undefined;
      const selector = random();
      return {
        name: `r${i}`,
        result: pick(['allow', 'allow', 'deny', 'ask'] as const),
        ...(selector < 0.3
          ? { tags: ['destructive'] }
          : selector < 0.4
            ? { tools: TOOLS }
            : { tools: TOOLS.filter(() => random() < 0.4).concat(pick(TOOLS)) }),
        ...(random() < 0.15 ? { select: (tool: Tool) => tool.name.length > 5 } : {}),
        ...(above === undefined
          ? {}
          : { match: (_tool: Tool, params: Readonly<Record<string, unknown>>) => Number(params['amount']) > above }),
      };
    });
    return new PermissionPolicy({ rules, fallback: pick(['allow', 'deny', 'ask'] as const), version: `p${v}` });
  }
  // One tool object in both registries (found under the same name in each, judged by each one's policy).
  const shared = toolOf('notes', version++);
  for (const registry of registries) {
    for (const name of TOOLS)
      if (random() < 0.85) registry.register(name === 'notes' ? shared : toolOf(name, version++));
    if (random() < 0.9) registry.setPermissionPolicy(policyOf(version++));
    if (random() < 0.5) {
      let asked = 0;
      registry.setPermissionHandler(async (request) => {
        asked++;
        trace.push(['asked', request.toolName, request.ruleName, request.parameters]);
        if (asked % 3 === 0) await hook('handler');
        return asked % 2 === 0 ? 'allow' : 'deny';
      });
    }
  }
  const layer = (): string[] | undefined =>
    random() < 0.2
      ? undefined
      : [...TOOLS, 'agent:peer']
          .filter(() => random() < 0.85)
          .map((name) => (random() < 0.2 ? name.toUpperCase() : name));
  // Five steady contexts (more than the four joints kept), some arrays frozen.
  const sets = Array.from({ length: 5 }, () => {
    const freeze = (items: string[] | undefined) => (items && random() < 0.3 ? Object.freeze(items) : items);
    return { declared: freeze(layer()), tenant: freeze(layer()), caller: freeze(layer()) };
  });
  const copy = (items: readonly string[] | undefined): string[] | undefined => (items ? [...items] : undefined);
  let last = sets[0]!;
  function contextOf(): GateContext {
    // Mostly the set of the call before (a server taking turns between a few tenants, in bursts).
    const set = (last = random() < 0.7 ? last : pick(sets));
    const shape = random();
    const declared = steady ? set.declared : copy(set.declared);
    const tenant = steady ? set.tenant : copy(set.tenant);
    const caller = steady ? set.caller : copy(set.caller);
    const agent = declared ? { name: 'agent', tools: declared } : 'agent';
    if (shape < 0.75)
      return {
        agent,
        ...(tenant ? { tenant: { id: 'acme', tools: tenant } } : {}),
        ...(caller ? { caller: { id: 'user', scopes: caller } } : {}),
      };
    if (shape < 0.9) {
      // A getter read by step 4 that calls the gate again (or changes the registry) in the middle of a call.
      const hooked = random() < 0.5;
      return {
        agent,
        ...(tenant ? { tenant: { id: 'acme', tools: tenant } } : {}),
        get caller() {
          if (hooked) syncHook('caller getter');
          return caller ? { id: 'user', scopes: caller } : {};
        },
      };
    }
    return {
      agent: 'agent',
      allowlist: ToolAllowlist.resolve(set.declared ?? TOOLS, {
        tenant: set.tenant,
        caller: set.caller,
        agent: 'agent',
      }),
    };
  }
  // The route's own tools (the runner's peers): changed in place, without a new environment.
  const peerOf = (v: number): Tool =>
    defineTool({
      name: 'agent:peer',
      description: 'peer',
      parameters: { type: 'object' },
      execute: () => (trace.push(['ran', 'agent:peer', v]), `peer v${v}`),
    });
  const peerTools = [peerOf(0), peerOf(1)];
  const peers = new Map<string, Tool>();
  const sources = registries.map((registry) => withTools(registry, peers));
  const route = { name: 'runner', grouped: true } as const;
  for (let step = 0; step < 100; step++) {
    const at = random() < 0.75 ? 0 : 1;
    const registry = registries[at]!;
    const op = random();
    try {
      if (op < 0.01) {
        const free = TOOLS.filter((name) => !registry.has(name));
        if (free.length > 0) registry.register(toolOf(pick(free), version++));
      } else if (op < 0.02) registry.unregister(pick(TOOLS));
      else if (op < 0.04) {
        const name = pick(TOOLS);
        registry.unregister(name);
        registry.register(name === 'notes' && random() < 0.5 ? shared : toolOf(name, version++));
      } else if (op < 0.05) {
        if (random() < 0.8) registry.setPermissionPolicy(policyOf(version++));
        else registry.removePermissionPolicy();
      } else if (op < 0.06) {
        const set = pick(sets);
        const target = pick([set.declared, set.tenant, set.caller]) as string[] | undefined;
        if (target && !Object.isFrozen(target)) {
          if (target.length > 0 && random() < 0.5) target.splice(Math.floor(random() * target.length), 1);
          // (never a second spelling of a form: a layer that collides is a broken configuration, reported only by
          // a call the joint does not answer, memo or not)
          else if (!target.some((entry) => entry.toLowerCase() === 'search')) target.push('search');
        }
      } else if (op < 0.1) {
        if (peers.size > 0 && random() < 0.3) peers.clear();
        else peers.set('agent:peer', pick(peerTools));
      } else if (op < 0.6) {
        // Calls in flight together, with changes queued between their awaits.
        const pending: Promise<unknown>[] = [];
        for (let k = 1 + Math.floor(random() * 3); k > 0; k--) {
          const name = pick(NAMES);
          const given = random() < 0.8 ? { amount: Math.floor(random() * 5) - 1 } : '{"amount":2}';
          const how = random();
          try {
            if (how < 0.5) pending.push(registry.invoke(name, given, contextOf()));
            else if (how < 0.7) pending.push(registry.decide({ name, arguments: given }, contextOf()));
            else if (how < 0.85)
              pending.push(
                registry.dispatch(
                  [
                    { name, arguments: given },
                    { name: pick(NAMES), arguments: { amount: 1 } },
                  ],
                  contextOf(),
                ),
              );
            else pending.push(dispatchCalls([readCall({ name, arguments: given })], contextOf(), sources[at]!, route));
          } catch (error) {
            pending.push(Promise.reject(error as Error));
          }
          if (random() < 0.3) queueMicrotask(() => syncHook('between'));
        }
        trace.push(['step', step, comparable(await Promise.allSettled(pending))]);
      } else {
        // The same call a few times in a row under one context (what gets its layers joined), on the registry or
        // on the route, whose own tools may change between the calls.
        const viaRoute = random() < 0.3;
        const name = viaRoute && random() < 0.5 ? 'agent:peer' : pick(NAMES);
        const context = contextOf();
        for (let k = 0; k < 4; k++) {
          if (viaRoute && random() < 0.3) peers.set('agent:peer', pick(peerTools));
          const result = viaRoute
            ? dispatchCalls([readCall({ name, arguments: { amount: 1 } })], context, sources[at]!, route)
            : registry.invoke(name, { amount: 1 }, context);
          trace.push(['again', step, k, comparable(await result)]);
        }
      }
    } catch (error) {
      trace.push(['threw', step, String(error)]);
    }
  }
  trace.push(['end']);
  while (running.length > 0) await running.shift();
  return trace;
}

describe("attacks on the joint slot's memo that held", () => {
  it('every call under steady layers is decided and run as under fresh copies of them', async () => {
    const built = jointsBuilt();
    for (let seed = 1; seed <= 150; seed++) {
      const kept = await scenario(seed, true);
      const fresh = await scenario(seed, false);
      expect({ seed, trace: kept }).toEqual({ seed, trace: fresh });
    }
    expect(jointsBuilt() - built).toBeGreaterThan(50);
  });

  it("a later call of a batch decided under the environment of before an earlier call's schema replaced its tool", async () => {
    const decide = async (steady: boolean) => {
      const ran: string[] = [];
      const registry = new ToolRegistry();
      const refund = (v: number, tags: ToolTag[]) =>
        defineTool({
          name: 'refund',
          parameters: { type: 'object' },
          metadata: { tags },
          execute: () => void ran.push(`refund v${v}`),
        });
      let armed = false;
      registry.register(refund(1, []));
      registry.register(
        defineTool({
          name: 'prep',
          parameters: {
            '~standard': {
              version: 1,
              vendor: 'attack',
              validate: async (value: unknown) => {
                await Promise.resolve();
                if (armed) {
                  // A destructive refund in its place while the batch is in flight.
                  registry.unregister('refund');
                  registry.register(refund(2, ['destructive']));
                }
                return { value };
              },
            },
          },
          execute: () => void ran.push('prep'),
        }),
      );
      registry.setPermissionPolicy(
        new PermissionPolicy({
          rules: [
            { name: 'deny-destructive', tags: ['destructive'], result: 'deny' },
            { name: 'allow-all', tools: ['refund', 'prep'], result: 'allow' },
          ],
          version: 'v',
        }),
      );
      const declared = ['prep', 'refund'];
      const plan = ['prep', 'refund'];
      const contextOf = (): GateContext => ({
        agent: { name: 'a', tools: steady ? declared : [...declared] },
        tenant: { id: 't', tools: steady ? plan : [...plan] },
      });
      // The memo made for refund v1 (the same layers again and again: joined).
      const before = jointsBuilt();
      for (let i = 0; i < 40 || (steady && jointsBuilt() === before && i < 2000); i++)
        await registry.invoke('refund', {}, contextOf());
      if (steady) expect(jointsBuilt()).toBeGreaterThan(before);
      await registry.invoke('refund', {}, contextOf());
      armed = true;
      const decisions = await decideCalls(
        [readCall({ name: 'prep', arguments: {} }), readCall({ name: 'refund', arguments: {} })],
        contextOf(),
        registry,
        { name: 'registry', grouped: true },
      );
      return { decisions: comparable(decisions), ran: ran.filter((name) => name !== 'refund v1') };
    };
    const kept = await decide(true);
    expect(kept).toEqual(await decide(false));
    expect((kept.decisions as { rule: string }[])[1]!.rule).toBe('deny-destructive');
  });
});
