/**
 * What a joint slot keeps of its tool beside the tool itself (src/gate/slot-memo.ts, issue 25): the tool's timeout,
 * only where it is fixed for good (a frozen tool whose `metadata` is a data property holding a frozen object whose
 * `timeoutMs` is one too), and the Decision's fields of the policy's kept outcome. Under steady layers (joined: the slot
 * answers) every call is decided, run, timed out and read as the same call under fresh copies of the layers (never
 * joined: read per call, as before): tools of defineTool's and of the caller's making (metadata not frozen and changed
 * between calls, a `metadata` getter, a `timeoutMs` getter, a tool not frozen whose metadata is replaced), rules
 * allowing, denying and asking, seeded. A call that hangs is refused by its timeout, whose text names the length used.
 */
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import { jointsBuilt } from '../../src/allowlist-cache.js';
import { defineTool, PermissionPolicy, ToolRegistry, type Tool } from '../../src/index.js';
import { steadyContexts } from './fixtures/steady-contexts.js';

const NAMES = ['search', 'refund', 'notes', 'crm:read', 'wipe'];
const TIMEOUTS = [2, 3, 5];

function comparable(result: unknown): unknown {
  return JSON.parse(
    JSON.stringify(result, (key, value: unknown) =>
      key === 'callId' || key === 'durationMs' || key === 'policyVersion' ? '·' : value,
    ),
  ) as unknown;
}

interface Knobs {
  /** The timeout a changeable tool's metadata answers now. */
  timeoutMs: number;
  reads: number;
}

/** A tool that answers at once, or hangs (until its timeout) when called with `hang`. */
function toolOf(name: string, kind: number, knobs: Knobs, random: () => number): Tool {
  const timeoutMs = random() < 0.7 ? TIMEOUTS[Math.floor(random() * TIMEOUTS.length)] : undefined;
  const base = defineTool({
    name,
    parameters: { type: 'object' },
    ...(timeoutMs === undefined ? {} : { metadata: { timeoutMs } }),
    execute: (args: Record<string, unknown>) =>
      args['hang'] === true ? new Promise(() => {}) : random() < 0.5 ? `${name}:${kind}` : Promise.resolve(kind),
  });
  if (kind === 0) return base;
  const copy: Record<string, unknown> = { ...base };
  const live = (): Tool['metadata'] => ({ ...base.metadata, timeoutMs: knobs.timeoutMs });
  if (kind === 1) copy['metadata'] = { ...base.metadata, timeoutMs }; // not frozen: changed between calls below
  if (kind === 2)
    Object.defineProperty(copy, 'metadata', {
      enumerable: true,
      get() {
        knobs.reads++;
        return Object.freeze(live());
      },
    });
  if (kind === 3) {
    const metadata = { ...base.metadata };
    Object.defineProperty(metadata, 'timeoutMs', {
      enumerable: true,
      get() {
        knobs.reads++;
        return knobs.timeoutMs;
      },
    });
    copy['metadata'] = Object.freeze(metadata);
  }
  // kind 4: not frozen, its metadata replaced between calls below.
  return (kind === 4 ? copy : Object.freeze(copy)) as unknown as Tool;
}

async function run(seed: number, steady: boolean): Promise<{ trace: unknown[]; reads: number }> {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const knobs: Knobs = { timeoutMs: 2, reads: 0 };
  const registry = new ToolRegistry({ toolTimeoutMs: 4 });
  const tools = new Map<string, Tool>();
  for (const name of NAMES) {
    const tool = toolOf(name, Math.floor(random() * 5), knobs, random);
    tools.set(name, tool);
    registry.register(tool);
  }
  registry.setPermissionPolicy(
    new PermissionPolicy({
      rules: [
        { name: 'asked', tools: ['wipe'], result: 'ask' },
        { name: 'no_refund', tools: ['refund'], result: pick(['allow', 'deny'] as const) },
        { name: 'reads', tools: ['search', 'crm:read'], result: 'allow', reason: 'reading is fine' },
      ],
      fallback: pick(['allow', 'deny'] as const),
      handler: (request) => (request.parameters['hang'] === true ? 'allow' : 'deny'),
    }),
  );
  const context = steadyContexts(NAMES, steady);
  const trace: unknown[] = [];
  for (let i = 0; i < 40; i++) {
    // Between calls: the knobs of the tools of the caller's making move (what is read per call must be read again).
    knobs.timeoutMs = pick(TIMEOUTS);
    for (const tool of tools.values()) {
      const metadata = (tool as unknown as { metadata: Record<string, unknown> }).metadata;
      if (!Object.isFrozen(metadata)) metadata['timeoutMs'] = pick(TIMEOUTS);
      if (!Object.isFrozen(tool))
        (tool as { metadata: unknown }).metadata = Object.freeze({ ...metadata, timeoutMs: pick(TIMEOUTS) });
    }
    const name = pick(NAMES);
    const args = { hang: random() < 0.3 };
    // Twice in a row under the same context (the steady arrays are joined), each read into the trace.
    trace.push(comparable(await registry.invoke(name, args, context())));
    trace.push(comparable(await registry.invoke(name, args, context())));
  }
  return { trace, reads: knobs.reads };
}

describe("a joint slot's kept timeout and outcome fields", () => {
  it('decide, run and time out every call under steady layers as under fresh copies of them (seeded)', async () => {
    for (let seed = 1; seed <= 10; seed++) {
      const before = jointsBuilt();
      const steady = await run(20261207 + seed, true);
      expect(jointsBuilt()).toBeGreaterThan(before);
      const fresh = await run(20261207 + seed, false);
      expect(steady.trace).toEqual(fresh.trace);
      expect(steady.reads).toBe(fresh.reads);
    }
  });
});
