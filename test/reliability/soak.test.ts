/**
 * Soak: many decisions and many asynchronous approvals with random latency, with the heap measured
 * before and after (after a full GC, following a warm-up that fills every bounded cache).
 *
 * CI size: 100,000 decisions and 10,000 approvals. Deep size (npm run test:deep): 1,000,000 decisions
 * and 100,000 approvals. The figures are printed.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { PermissionPolicy, ToolRegistry, type GateContext, type PermissionResult } from '../../src/index.js';
import { type ToolCallInput } from '../../src/formats/entry.js';
import { prng, SEED, size } from './size.js';

const DECISIONS = size(100_000, 1_000_000);
const APPROVALS = size(10_000, 100_000);
const CONCURRENCY = 500;
/** The heap may grow by at most this much across a soak (bytes), after a full GC. */
const HEAP_BOUND = 4 * 1024 * 1024;

function gcFunction(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  // Without --expose-gc on the worker: enable it now and take gc from a fresh context.
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

async function settledHeap(gc: () => void): Promise<number> {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().heapUsed;
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(2)} MB`;

function fixture(handler?: (request: { parameters: Readonly<Record<string, unknown>> }) => Promise<PermissionResult>) {
  const registry = new ToolRegistry({ handlerTimeoutMs: 1_000 });
  let executed = 0;
  const names = ['search', 'refund', 'github:search', 'delete_user', 'Straße'];
  for (const name of names) {
    registry.register({
      name,
      parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      metadata: { tags: name === 'delete_user' ? ['destructive'] : ['read_only'] },
      execute: () => {
        executed++;
        return 'ok';
      },
    });
  }
  registry.setPermissionPolicy(
    new PermissionPolicy({
      rules: [
        { name: 'big_refunds', tools: ['refund'], match: (_t, p) => Number(p['n']) > 50, result: 'ask' },
        { name: 'refunds', tools: ['refund'], result: 'allow' },
        { name: 'destructive', tags: ['destructive'], result: 'ask' },
        { name: 'read_only', tags: ['read_only'], result: 'allow' },
      ],
      fallback: 'deny',
      ...(handler ? { handler } : {}),
    }),
  );
  let decided = 0;
  let allowed = 0;
  registry.onChange((event) => {
    if (event.type === 'tool_decided') {
      decided++;
      if (event.decision.effect === 'allow') allowed++;
    }
  });
  return { registry, counts: () => ({ executed, decided, allowed }) };
}

const CONTEXTS: readonly GateContext[] = [
  {},
  { agent: 'concierge', tenant: { id: 'acme', tools: Object.freeze(['search', 'refund', 'STRASSE']) } },
  {
    agent: { name: 'peer', tools: Object.freeze(['search', 'github:search', 'delete_user']) },
    caller: { scopes: Object.freeze(['search', 'delete_user']) },
  },
  { tenant: { id: 'free', tools: Object.freeze([]) } },
];

describe('soak', () => {
  it(`${DECISIONS.toLocaleString('en')} decisions leave the heap where it was`, async () => {
    const gc = gcFunction();
    const { registry, counts } = fixture();
    const random = prng(SEED);
    const names = ['search', 'SEARCH', 'refund', 'github:search', 'delete_user', 'strasse', 'unknown', 'ｓｅａｒｃｈ'];
    const argsList = ['{"n": 1}', '{"n": 99}', '{"n": "x"}', '{', { n: 3 }];
    const one = (i: number): Promise<unknown> => {
      const call: ToolCallInput = {
        type: 'function_call',
        call_id: `c${i}`,
        name: names[Math.floor(random() * names.length)]!,
        arguments: argsList[Math.floor(random() * argsList.length)] as string,
      };
      return registry.decide(call, CONTEXTS[i % CONTEXTS.length]!);
    };
    const batch = async (from: number, to: number): Promise<void> => {
      for (let i = from; i < to; i += 1_000) {
        const pending: Promise<unknown>[] = [];
        for (let j = i; j < Math.min(to, i + 1_000); j++) pending.push(one(j));
        await Promise.all(pending);
      }
    };
    await batch(0, 20_000); // warm-up: JIT, caches, allowlist resolution per context
    const before = await settledHeap(gc);
    const started = performance.now();
    await batch(0, DECISIONS);
    const seconds = (performance.now() - started) / 1_000;
    const after = await settledHeap(gc);
    const { decided, allowed, executed } = counts();
    console.log(
      `soak decisions: ${DECISIONS} in ${seconds.toFixed(2)} s (${Math.round(DECISIONS / seconds).toLocaleString('en')}/s); ` +
        `allowed ${allowed}/${decided}; heap before ${mb(before)}, after ${mb(after)}, growth ${mb(after - before)}`,
    );
    expect(decided).toBe(DECISIONS + 20_000);
    expect(allowed).toBeGreaterThan(0);
    expect(allowed).toBeLessThan(decided);
    expect(executed).toBe(0); // decide() never executes
    expect(after - before).toBeLessThan(HEAP_BOUND);
  });

  it(`${APPROVALS.toLocaleString('en')} asynchronous approvals with 0-2 ms latency, ${CONCURRENCY} at a time, leave the heap where it was`, async () => {
    const gc = gcFunction();
    const random = prng(SEED ^ 0x5eed);
    let asked = 0;
    let approved = 0;
    const handler = (request: { parameters: Readonly<Record<string, unknown>> }): Promise<PermissionResult> =>
      new Promise((resolve) => {
        asked++;
        const answer: PermissionResult = Number(request.parameters['n']) % 2 === 0 ? 'allow' : 'deny';
        if (answer === 'allow') approved++;
        setTimeout(() => resolve(answer), Math.floor(random() * 3));
      });
    const { registry, counts } = fixture(handler);
    const run = async (total: number): Promise<void> => {
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < total) {
          const i = next++;
          const name = i % 2 === 0 ? 'refund' : 'delete_user';
          await registry.invoke(name, { n: 51 + (i % 7) }, {});
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    };
    await run(2_000); // warm-up
    const warm = { asked, approved, ...counts() };
    const before = await settledHeap(gc);
    const started = performance.now();
    await run(APPROVALS);
    const seconds = (performance.now() - started) / 1_000;
    const after = await settledHeap(gc);
    const end = counts();
    console.log(
      `soak approvals: ${APPROVALS} in ${seconds.toFixed(2)} s (${Math.round(APPROVALS / seconds).toLocaleString('en')}/s, ${CONCURRENCY} concurrent); ` +
        `approved ${approved - warm.approved}, executed ${end.executed - warm.executed}; heap before ${mb(before)}, after ${mb(after)}, growth ${mb(after - before)}`,
    );
    expect(asked - warm.asked).toBe(APPROVALS);
    // Exactly the approved calls ran; every denied one was refused.
    expect(end.executed - warm.executed).toBe(approved - warm.approved);
    expect(end.allowed - warm.allowed).toBe(approved - warm.approved);
    expect(after - before).toBeLessThan(HEAP_BOUND);
  });
});
