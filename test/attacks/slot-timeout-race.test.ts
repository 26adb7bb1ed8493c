/**
 * Attacks on the joint slot's kept timeout (src/gate/slot-memo.ts, issue 25.1). execute.ts reads the slot's
 * `timeoutMs` after the tool's `execute` returned, not when precheck found the slot keeping that tool's timeout. A tool
 * that delegates, synchronously, to a tool of the same name in another registry (or in this one changed) under the same
 * steady layers has the slot re-kept for that other tool meanwhile. The outer call must still be timed by its own
 * tool's timeout, as under fresh copies of the layers; so must a call whose schema is asynchronous (the Batch runs it).
 */
import { describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry, type GateContext, type Tool, type ToolDefinition } from '../../src/index.js';
import { steadyContexts } from '../gate/fixtures/steady-contexts.js';

const NAMES = ['slow', 'other'];

type Schema = ToolDefinition['parameters'];

/** A Standard Schema whose validation waits for `gate()`. */
function heldSchema(gate: () => Promise<void>): Schema {
  return {
    '~standard': {
      version: 1,
      vendor: 'test',
      validate: (value: unknown) => gate().then(() => ({ value: value as Record<string, unknown> })),
    },
  } as Schema;
}

function toolOf(
  name: string,
  timeoutMs: number | undefined,
  frozen: boolean,
  execute: (args: Record<string, unknown>) => unknown,
  parameters: Schema = { type: 'object' },
): Tool {
  const tool = defineTool({
    name,
    parameters,
    ...(timeoutMs === undefined ? {} : { metadata: { timeoutMs } }),
    execute,
  });
  return frozen ? tool : ({ ...tool, metadata: { ...tool.metadata } } as Tool);
}

const hang = (args: Record<string, unknown>): unknown => (args['hang'] === true ? new Promise(() => {}) : 'done');

function contexts(steady: boolean): () => GateContext {
  return steadyContexts(NAMES, steady);
}

function comparable(result: unknown): unknown {
  return JSON.parse(
    JSON.stringify(result, (key, value: unknown) => (key === 'durationMs' || key === 'callId' ? '·' : value)),
  ) as unknown;
}

/**
 * Registry one's `slow` (5 ms) hangs after calling registry two's `slow` (`inner` ms, frozen or not) at once: from its
 * `execute`, or from its synchronous schema's `validate` (`inSchema`).
 */
async function delegated(
  steady: boolean,
  inner: number | undefined,
  frozenInner: boolean,
  inSchema = false,
): Promise<unknown> {
  const context = contexts(steady);
  const two = new ToolRegistry({ toolTimeoutMs: 40 });
  const one = new ToolRegistry({ toolTimeoutMs: 40 });
  two.register(toolOf('slow', inner, frozenInner, hang));
  const schema = {
    '~standard': {
      version: 1,
      vendor: 'test',
      validate: (value: unknown) => {
        if ((value as Record<string, unknown>)['hang'] === true) void two.invoke('slow', {}, context());
        return { value: value as Record<string, unknown> };
      },
    },
  } as Schema;
  const outer = inSchema
    ? toolOf('slow', 5, true, hang, schema)
    : toolOf('slow', 5, true, (args) => {
        if (args['hang'] === true) void two.invoke('slow', {}, context());
        return hang(args);
      });
  one.register(outer);
  for (const registry of [one, two]) registry.register(toolOf('other', 5, true, hang));
  // Warm: the steady arrays joined, the slot keeping registry one's tool and its timeout.
  for (let i = 0; i < 40; i++) await one.invoke('slow', {}, context());
  return comparable(await one.invoke('slow', { hang: true }, context()));
}

/** Registry one's `slow` (5 ms, asynchronous schema) waits; registry two's `slow` is called meanwhile. */
async function waited(steady: boolean, inner: number | undefined, frozenInner: boolean): Promise<unknown> {
  const context = contexts(steady);
  let release = (): void => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const one = new ToolRegistry({ toolTimeoutMs: 40 });
  const two = new ToolRegistry({ toolTimeoutMs: 40 });
  one.register(
    toolOf(
      'slow',
      5,
      true,
      hang,
      heldSchema(() => held),
    ),
  );
  two.register(toolOf('slow', inner, frozenInner, hang));
  for (const registry of [one, two]) registry.register(toolOf('other', 5, true, hang));
  for (let i = 0; i < 40; i++) await two.invoke('slow', {}, context());
  const first = one.invoke('slow', { hang: true }, context());
  await two.invoke('slow', {}, context());
  await two.invoke('slow', {}, context());
  release();
  return comparable(await first);
}

describe("a joint slot's kept timeout, re-kept for another tool before the call's deadline is set", () => {
  for (const [inner, frozen] of [
    [30, true],
    [undefined, true],
    [30, false],
  ] as const) {
    const what = `the other tool ${frozen ? 'frozen' : 'not frozen'}, its timeout ${inner ?? 'the default'}`;
    it(`times a delegating tool out by its own timeout (${what})`, async () => {
      const fresh = await delegated(false, inner, frozen);
      expect(JSON.stringify(fresh)).toContain('within 5 ms');
      expect(await delegated(true, inner, frozen)).toEqual(fresh);
    });
    it(`times a tool whose schema delegates out by its own timeout (${what})`, async () => {
      const fresh = await delegated(false, inner, frozen, true);
      expect(JSON.stringify(fresh)).toContain('within 5 ms');
      expect(await delegated(true, inner, frozen, true)).toEqual(fresh);
    });
    it(`times a call that waited on its schema out by its own timeout (${what})`, async () => {
      const fresh = await waited(false, inner, frozen);
      expect(JSON.stringify(fresh)).toContain('within 5 ms');
      expect(await waited(true, inner, frozen)).toEqual(fresh);
    });
  }
});
