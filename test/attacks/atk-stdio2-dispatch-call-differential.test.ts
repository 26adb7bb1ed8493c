/**
 * stdio2's one-call dispatch (src/gate/dispatch.ts's `dispatchCall`, the gateway's `tools/call` since 53a7c2f)
 * against the array path it stands for (`dispatchCalls([call])[0]`), on random calls: tools found or not, names in
 * other cases, arguments valid or not against async and sync schemas, an allowlist, policy rules that allow, deny,
 * ask or throw on the arguments, a permission handler answering asks, routes with and without a person, meter and
 * observer, listeners on or off, tools that return, throw or time out. Each must decide, run (or not) and answer the
 * same: the same result, the same executions, the same events.
 */
import { describe, expect, it } from 'vitest';
import { readCall } from '../../src/formats/index.js';
import { dispatchCall, dispatchCalls, type GateContext } from '../../src/gate/index.js';
import type { Route } from '../../src/contracts/route.js';
import { defineTool, PermissionPolicy, ToolRegistry } from '../../src/index.js';

function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

interface World {
  readonly registry: ToolRegistry;
  readonly log: string[];
}

/** One registry as the seed makes it (built twice: once per path). */
function world(seed: number): World {
  const r = random(seed);
  const log: string[] = [];
  const registry = new ToolRegistry();
  registry.register(
    defineTool({
      name: 'read',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      metadata: { tags: ['read_only'] },
      execute: (args) => {
        log.push(`read ${JSON.stringify(args)}`);
        return `read ${String((args as { path: string }).path)}`;
      },
    }),
  );
  registry.register(
    defineTool({
      name: 'write',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' }, n: { type: 'integer', maximum: 5 } },
        required: ['path'],
        additionalProperties: false,
      },
      execute: async (args) => {
        log.push(`write ${JSON.stringify(args)}`);
        if ((args as { n?: number }).n === 3) throw new Error('three');
        return { ok: true };
      },
    }),
  );
  registry.register(
    defineTool({
      name: 'slow',
      parameters: { type: 'object' },
      metadata: { timeoutMs: 20 },
      execute: (_args, { signal }) =>
        new Promise((resolve) => {
          log.push('slow started');
          signal.addEventListener('abort', () => {
            log.push('slow aborted');
            resolve('late');
          });
        }),
    }),
  );
  const rules = [];
  if (r() < 0.7)
    rules.push({
      name: 'deny-etc',
      tools: ['read', 'write'],
      result: 'deny' as const,
      match: (_t: unknown, p: Readonly<Record<string, unknown>>) => String(p['path']).startsWith('/etc'),
    });
  if (r() < 0.5) rules.push({ name: 'ask-write', tools: ['write'], result: 'ask' as const });
  if (r() < 0.3)
    rules.push({
      name: 'throws',
      tools: ['read'],
      result: 'allow' as const,
      match: (_t: unknown, p: Readonly<Record<string, unknown>>) => {
        if (p['path'] === 'boom') throw new Error('boom');
        return false;
      },
    });
  if (r() < 0.8) rules.push({ name: 'allow-rest', result: 'allow' as const, match: () => true });
  registry.setPermissionPolicy(new PermissionPolicy({ rules }));
  if (r() < 0.6) {
    const answer = r() < 0.5 ? 'allow' : 'deny';
    registry.setPermissionHandler(() => answer as 'allow' | 'deny');
  }
  if (r() < 0.3) registry.onChange((e) => log.push(`event ${e.type}`));
  return { registry, log };
}

const NAMES = ['read', 'READ', 'write', 'Write', 'slow', 'nope', 'ｒｅａｄ', ''];
const ARGS: unknown[] = [
  {},
  { path: '/tmp/x' },
  { path: '/etc/passwd' },
  { path: 'boom' },
  { path: '/tmp/y', n: 3 },
  { path: '/tmp/y', n: 9 },
  { path: 1 },
  { path: '/tmp/z', extra: true },
  'not json {',
  '{"path":"/tmp/s"}',
  null,
  [],
];

/** What the caller and the log see of a result: its ids and times left out. */
function seen(result: unknown): unknown {
  const r = result as Record<string, unknown>;
  const decision = r['decision'] as Record<string, unknown> | undefined;
  return {
    status: r['status'],
    isError: r['isError'],
    content: r['status'] === 'pending' ? undefined : r['content'],
    value: r['value'],
    decision: decision && {
      effect: decision['effect'],
      stage: decision['stage'],
      by: decision['by'],
      rule: decision['rule'],
      reason: decision['reason'],
      tool: decision['tool'],
    },
  };
}

async function runCase(seed: number, step: number, one: boolean): Promise<unknown> {
  const r = random(seed * 7919 + step);
  const { registry, log } = world(seed);
  const name = NAMES[Math.floor(r() * NAMES.length)]!;
  const args = ARGS[Math.floor(r() * ARGS.length)];
  const context: GateContext =
    r() < 0.4 ? { agent: { name: 'a', tools: r() < 0.5 ? ['read', 'slow'] : ['write'] } } : {};
  const route: Route = { name: 'adapter', grouped: false };
  const kind = r();
  const answer = r() < 0.5 ? 'allow' : 'deny';
  if (kind < 0.25)
    (route as { person?: unknown }).person = {
      approvals: { secret: 'x'.repeat(32) },
      ask: () => ({ effect: answer }),
    };
  else if (kind < 0.4) (route as { observe?: unknown }).observe = { decided: () => log.push('observed') };
  const call = readCall({ id: `c${step}`, name, arguments: args as never });
  let result: unknown;
  try {
    result = one
      ? await dispatchCall(call, context, registry, route)
      : (await dispatchCalls([call], context, registry, route))[0];
  } catch (error) {
    result = { threw: (error as Error).message };
  }
  return { result: 'threw' in (result as object) ? result : seen(result), log: [...log] };
}

describe('dispatchCall against dispatchCalls of one call', () => {
  for (let seed = 1; seed <= 12; seed++) {
    it(`seed ${seed}: the same results, executions and events`, async () => {
      for (let step = 0; step < 40; step++) {
        const a = await runCase(seed, step, true);
        const b = await runCase(seed, step, false);
        expect(a, `seed ${seed} step ${step}`).toEqual(b);
        const result = (a as { result: { status?: string; decision?: { stage?: string } } }).result;
        outcomes.add(`${String(result.status)}/${String(result.decision?.stage)}`);
      }
    });
  }

  it('the cases reached every outcome', () => {
    for (const outcome of ['ok/policy', 'refused/policy', 'error/policy', 'refused/validation', 'refused/lookup'])
      expect([...outcomes]).toContain(outcome);
  });
});

const outcomes = new Set<string>();
