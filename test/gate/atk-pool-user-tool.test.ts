/**
 * Attack on the gateway calls' AbortController pool (gate/controller-pool.ts): a finished gateway call's
 * controller — never aborted, no listener left — serves a later call. A tool registered by hand on
 * `gateway.registry` may keep its signal after it succeeded (a dependent `AbortSignal.any`, background
 * polling) with no listener on the signal itself to show it: pooled on the call alone, its controller served
 * the next gateway call, and that call's cancel aborted the finished tool's signal. The pool is keyed on the
 * tool too: only the gateway's own upstream tools (marked `releasesSignal`) take part.
 */
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { readCall } from '../../src/formats/index.js';
import { pools } from '../../src/gate/controller-pool.js';
import { dispatchCalls, gatewayCall, type GateContext, type ToolResult } from '../../src/gate/index.js';
import { createGateway } from '../../src/gateway/index.js';
import { defineTool, ToolRegistry, type Tool } from '../../src/index.js';
import { loadPolicyFile } from '../../src/policy-file/index.js';
import {
  cleanupsAfterEach,
  DOCS,
  gatewayOn,
  inMemoryClient,
  stdioUpstream,
  tempDir,
  until,
  writePolicy,
} from '../harness.js';

const cleanups = cleanupsAfterEach();

async function run(registry: ToolRegistry, name: string, context: GateContext): Promise<ToolResult> {
  const [result] = await dispatchCalls([readCall({ id: `c-${name}`, name, arguments: {} })], context, registry, {
    name: 'gateway',
    grouped: false,
  });
  return result as ToolResult;
}

/** A tool that keeps a dependent of its signal after it succeeded (what it would watch in the background). */
function keeper(name: string, kept: AbortSignal[]): Tool {
  return defineTool({
    name,
    parameters: { type: 'object' },
    execute: async (_args, { signal }) => {
      kept.push(AbortSignal.any([signal]));
      // A CallToolResult: the gateway answers a call with its tool's value as it is.
      return { content: [{ type: 'text', text: 'done' }] };
    },
  });
}

/** A tool that runs until its signal aborts. */
function waiter(name: string, seen: AbortSignal[]): Tool {
  return defineTool({
    name,
    parameters: { type: 'object' },
    execute: (_args, { signal }) => {
      seen.push(signal);
      return new Promise((resolve) =>
        signal.addEventListener('abort', () => resolve({ content: [{ type: 'text', text: 'stopped' }] }), {
          once: true,
        }),
      );
    },
  });
}

describe('atk: a tool that keeps its signal after a gateway call succeeded', () => {
  it("never sees a later gateway call's cancel (the gate's dispatch, gatewayCall contexts)", async () => {
    const kept: AbortSignal[] = [];
    const seen: AbortSignal[] = [];
    const registry = new ToolRegistry();
    registry.register(keeper('keeper', kept));
    registry.register(waiter('waiter', seen));
    expect((await run(registry, 'keeper', gatewayCall({ agent: 'a' }))).status).toBe('ok');
    const cancel = new AbortController();
    const running = run(registry, 'waiter', gatewayCall({ agent: 'a', signal: cancel.signal }));
    cancel.abort(new Error('the client cancelled the later call'));
    expect((await running).status).toBe('ok');
    expect(seen[0]!.aborted).toBe(true);
    expect(kept[0]!.aborted).toBe(false);
  });

  it("a user tool on gateway.registry, called through the gateway: a later call's cancel does not abort it", async () => {
    const dir = tempDir('atk-pool-user-tool');
    const set = await loadPolicyFile(writePolicy(dir, { rules: [{ name: 'all', result: 'allow' }] }));
    const gateway = await createGateway({ policy: set, upstreams: {}, pins: null });
    cleanups.push(() => gateway.close());
    const kept: AbortSignal[] = [];
    const seen: AbortSignal[] = [];
    gateway.registry.register(keeper('keeper', kept));
    gateway.registry.register(waiter('waiter', seen));
    const client = await inMemoryClient(cleanups, gateway);
    const done = await client.callTool({ name: 'keeper', arguments: {} });
    expect(done.isError, JSON.stringify(done)).toBeFalsy();
    const cancel = new AbortController();
    const later = client.callTool({ name: 'waiter', arguments: {} }, CallToolResultSchema, { signal: cancel.signal });
    await until('the later call runs', () => seen.length === 1);
    cancel.abort(new Error('the client cancelled the later call'));
    await expect(later).rejects.toThrow();
    await until("the later call's tool was stopped", () => seen[0]!.aborted);
    expect(kept[0]!.aborted).toBe(false);
  });

  it("only the gateway's own upstream tools are marked for the pool, never a tool registered by hand", async () => {
    const dir = tempDir('atk-pool-user-tool');
    const policy = writePolicy(dir, {
      gateway: { upstreams: { docs: { ...stdioUpstream(DOCS), connectTimeoutMs: 30_000 } }, pin: 'off' },
      rules: [{ name: 'all', result: 'allow' }],
    });
    const { gateway } = await gatewayOn(cleanups, policy);
    gateway.registry.register(keeper('keeper', []));
    await until('the upstream is listed', () => gateway.registry.get('docs:echo') !== undefined);
    expect([pools(gateway.registry.get('docs:echo')!), pools(gateway.registry.get('keeper')!)]).toEqual([true, false]);
  });
});
