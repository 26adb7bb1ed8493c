/**
 * Attack on the controller pool's marking (6a1483c): only the gateway's own upstream tools may share finished
 * calls' AbortControllers, marked by connectMcpServer's "internal" `releasesSignal` option. The option was read
 * off the public options object, so `connectMcpServer` from `toolgate/mcp` (the public entry) marks the tools
 * of any client given to it, an options object spread from configuration included: a client whose callTool
 * keeps its signal (a dependent AbortSignal.any, as a tool registered by hand may) is then pooled, and a later
 * gateway call's cancel aborts the finished call's signal — what 6a1483c set out to stop.
 *
 * The mark was then a symbol key (`RELEASES_SIGNAL`) read off the same options object: a Proxy whose `get` answers
 * `true` for every symbol it does not hold carried it just as well. The gateway now says so through an entry of its
 * own (`connectUpstreamServer`); nothing read off the options of `connectMcpServer` marks a tool.
 */
import { Client } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { connectMcpServer } from '../../src/adapters/mcp/index.js';
import { readCall } from '../../src/formats/index.js';
import { pools } from '../../src/gate/controller-pool.js';
import { dispatchCalls, gatewayCall, type GateContext, type ToolResult } from '../../src/gate/index.js';
import { ToolRegistry } from '../../src/index.js';
import { openTransport } from '../../src/mcp/transport.js';
import { cleanupsAfterEach, DOCS, stdioUpstream } from '../harness.js';

const cleanups = cleanupsAfterEach();

async function run(registry: ToolRegistry, name: string, context: GateContext): Promise<ToolResult> {
  const [result] = await dispatchCalls([readCall({ id: `c-${name}`, name, arguments: {} })], context, registry, {
    name: 'gateway',
    grouped: false,
  });
  return result as ToolResult;
}

/** A user's client that keeps a dependent of each call's signal (what it watches in the background). */
class KeepingClient extends Client {
  readonly kept: AbortSignal[] = [];
  override async callTool(...[params, options]: Parameters<Client['callTool']>): ReturnType<Client['callTool']> {
    const signal = options!.signal!;
    this.kept.push(AbortSignal.any([signal]));
    if (params.name === 'slow')
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    return { content: [{ type: 'text', text: 'done' }] };
  }
}

/**
 * What the mark would do: the finished call's controller serves the next, whose cancel reaches the first. A finished
 * call's signal the client kept stays not aborted when a later call is cancelled.
 */
async function expectKeptSignalUntouched(registry: ToolRegistry, client: KeepingClient): Promise<void> {
  expect((await run(registry, 'user:rug_pull', gatewayCall({ agent: 'a' }))).status).toBe('ok');
  const cancel = new AbortController();
  const later = run(registry, 'user:slow', gatewayCall({ agent: 'a', signal: cancel.signal }));
  await new Promise((resolve) => setTimeout(resolve, 20));
  cancel.abort(new Error('the client cancelled the later call'));
  await later;
  expect(client.kept[1]!.aborted).toBe(true);
  expect(client.kept[0]!.aborted).toBe(false);
}

describe('atk: connectMcpServer from toolgate/mcp with a "releasesSignal" option', () => {
  it("never marks the tools of a user's client for the gateway's controller pool", async () => {
    const client = new KeepingClient({ name: 'user', version: '1' });
    await client.connect(openTransport({ stdio: stdioUpstream(DOCS) }));
    const registry = new ToolRegistry();
    // As a configuration object spread into the options would carry it (no cast: not an object literal).
    const fromConfig = { prefix: 'user', releasesSignal: true };
    const connection = await connectMcpServer(registry, { client, ...fromConfig });
    cleanups.push(() => connection.close());
    expect(pools(registry.get('user:echo')!)).toBe(false);

    await expectKeptSignalUntouched(registry, client);
  });

  it('never marks them for options given as a Proxy that answers true for every symbol key it does not hold', async () => {
    const client = new KeepingClient({ name: 'user', version: '1' });
    await client.connect(openTransport({ stdio: stdioUpstream(DOCS) }));
    const registry = new ToolRegistry();
    const own = { client, prefix: 'user' };
    // Its options' own keys as they are; any other symbol (a mark the library might read) answered true. Unknown
    // string keys are left undefined: answered true, `stdio`, `url` and `metadata` would be refused before any mark.
    const options = new Proxy(own, {
      get: (target, key, receiver) =>
        typeof key === 'symbol' && !Reflect.has(target, key) ? true : Reflect.get(target, key, receiver),
    });
    const connection = await connectMcpServer(registry, options);
    cleanups.push(() => connection.close());
    expect(pools(registry.get('user:echo')!)).toBe(false);

    await expectKeptSignalUntouched(registry, client);
  });
});
