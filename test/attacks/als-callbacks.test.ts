/**
 * Attack on issue 25 (the call scope passed explicitly, no AsyncLocalStorage): an upstream that calls back
 * while it serves one client's request — a log line, an elicitation — is attributed by the requests in
 * flight to it (Upstream.forward counts the scope's server). A request whose scope got lost on its way
 * down (passed as undefined: "the gateway's own") is not counted, and what its upstream sends back goes to
 * whichever other client is in flight or listening: bob's log line or question reaching alice. Every kind of
 * forwarded request is tried, from a 2026-07-28 client (fast path and SDK path) and a 2025 session.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import {
  cleanupsAfterEach,
  gatewayOverHttp,
  modernMeta,
  postMcp,
  ROOT,
  stdioUpstream,
  tempDir,
  until,
  untilListed,
  writePolicy,
} from '../harness.js';

const cleanups = cleanupsAfterEach();
const CALLBACK = join(ROOT, 'test/attacks/fixtures/callback-server.ts');

async function start(listMs = 0, second = false) {
  const dir = tempDir('als-callbacks');
  const upstream = (listed: string) => ({
    ...stdioUpstream(CALLBACK, { LIST_MS: String(listMs), LISTED: listed }),
    connectTimeoutMs: 30_000,
  });
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: { cb: upstream('cb://log/x'), ...(second ? { cb2: upstream('cb2://log/y') } : {}) },
      pin: 'off',
    },
    rules: [{ name: 'all', result: 'allow' }],
    resources: [
      { name: 'cb', namespace: 'cb', uri: 'cb://**', result: 'allow' },
      { name: 'cb2', namespace: 'cb2', uri: 'cb2://**', result: 'allow' },
    ],
    prompts: [{ name: 'p', namespace: 'cb', prompts: 'p', result: 'allow' }],
  });
  return gatewayOverHttp(cleanups, policy, {
    http: () => ({
      audience: false,
      authenticate: async (token) => ({ token, clientId: token, scopes: [] }),
      context: (auth) => ({ caller: { id: auth.clientId } }),
    }),
  });
}

/** A 2025-11-25 session of `who` over HTTP that hears log lines and answers elicitation naming itself. */
async function legacyClient(url: URL, who: string) {
  const client = new ClientV1({ name: who, version: '1' }, { capabilities: { elicitation: { form: {} } } });
  const logs: string[] = [];
  const asked: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(String(n.params.data)));
  client.setRequestHandler(ElicitRequestSchema, async (r) => {
    asked.push(String(r.params.message));
    return { action: 'accept', content: { who } };
  });
  await client.connect(new HttpV1(url, { requestInit: { headers: { authorization: `Bearer ${who}` } } }));
  cleanups.push(() => client.close());
  await untilListed(client, 'cb:hold');
  return { client, logs, asked };
}

/** One 2026-07-28 request as a client sends it (`mcp-name` the params' name or uri), bearer `token`. */
function modernRequest<T = Record<string, unknown>>(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  options: { readonly token: string; readonly capabilities?: Record<string, unknown> },
) {
  const name = params['name'] ?? params['uri'];
  return postMcp<T>(
    url,
    { method, params: { ...params, _meta: modernMeta(options.capabilities) } },
    {
      authorization: `Bearer ${options.token}`,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
    },
  );
}

const textOf = (result: CallToolResult): string =>
  result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n');

/** Every request kind the gateway forwards, as bob's 2026-07-28 client sends it (SDK path with `sdk`). */
function modernKinds(url: URL, tag: string, sdk: boolean) {
  const options = { token: 'bob', ...(sdk ? { capabilities: { experimental: {} } } : {}) };
  return [
    () => modernRequest(url, 'tools/call', { name: 'cb:logs', arguments: { tag } }, options),
    () => modernRequest(url, 'resources/read', { uri: `cb://log/${tag}` }, options),
    () => modernRequest(url, 'prompts/get', { name: 'cb:p', arguments: { tag } }, options),
    () => modernRequest(url, 'resources/list', {}, options),
    () => modernRequest(url, 'resources/templates/list', {}, options),
    () => modernRequest(url, 'prompts/list', {}, options),
    () =>
      modernRequest(
        url,
        'completion/complete',
        { ref: { type: 'ref/prompt', name: 'cb:p' }, argument: { name: 'tag', value: tag } },
        options,
      ),
  ];
}

/** The same kinds from a 2025 session. */
function legacyKinds(client: ClientV1, tag: string) {
  return [
    () => client.callTool({ name: 'cb:logs', arguments: { tag } }),
    () => client.readResource({ uri: `cb://log/${tag}` }),
    () => client.getPrompt({ name: 'cb:p', arguments: { tag } }),
    () => client.listResources(),
    () => client.listResourceTemplates(),
    () => client.listPrompts(),
    () => client.complete({ ref: { type: 'ref/prompt', name: 'cb:p' }, argument: { name: 'tag', value: tag } }),
  ];
}

describe(
  'an upstream calling back mid-request reaches only the client whose request it serves',
  { timeout: 120_000 },
  () => {
    it("log lines of bob's requests (every kind, both eras, both 2026 paths) never reach alice, who listens", async () => {
      const { url } = await start();
      const alice = await legacyClient(url, 'alice');
      await alice.client.setLoggingLevel('debug');
      const bob = await legacyClient(url, 'bob');
      await sleep(200);
      alice.logs.length = 0;
      // One at a time (each the only request in flight), then all at once.
      const kinds = [
        ...modernKinds(url, 'bob-fast', false),
        ...modernKinds(url, 'bob-sdk', true),
        ...legacyKinds(bob.client, 'bob-legacy'),
      ];
      for (const kind of kinds) {
        const answer = (await kind()) as { status?: number; body?: unknown };
        if (answer.status !== undefined) expect([answer.status, answer.body]).toEqual([200, expect.anything()]);
      }
      await Promise.all(kinds.map((kind) => kind()));
      await sleep(300);
      expect(alice.logs).toEqual([]);
      // What alice's own request logs does reach her (the relay works at all).
      await alice.client.callTool({ name: 'cb:logs', arguments: { tag: 'alice-own' } });
      await until('alice hears her own line', () => alice.logs.includes('tools/call alice-own'));
    });

    it("bob's upstream's elicitation never reaches alice, whose call is in flight to the same upstream", async () => {
      const { url } = await start();
      const alice = await legacyClient(url, 'alice');
      const bob = await legacyClient(url, 'bob');
      // alice's call stays in flight while bob's requests that make the upstream ask go one at a time (each
      // the only other one in flight: lost, its scope would leave alice the one client to ask).
      const held = alice.client.callTool({ name: 'cb:hold', arguments: { tag: 'alice', ms: 9000 } });
      let holding = true;
      void held.finally(() => (holding = false));
      await sleep(300);
      const asking = [
        () =>
          modernRequest(
            url,
            'tools/call',
            { name: 'cb:elicit', arguments: { tag: 'bob-fast' } },
            { token: 'bob', capabilities: { elicitation: { form: {} } } },
          ),
        () =>
          modernRequest(
            url,
            'tools/call',
            { name: 'cb:elicit', arguments: { tag: 'bob-sdk' } },
            { token: 'bob', capabilities: { elicitation: { form: {} }, experimental: {} } },
          ),
        () => modernRequest(url, 'resources/read', { uri: 'cb://elicit/bob-read-fast' }, { token: 'bob' }),
        () =>
          modernRequest(
            url,
            'resources/read',
            { uri: 'cb://elicit/bob-read-sdk' },
            { token: 'bob', capabilities: { experimental: {} } },
          ),
        () => bob.client.readResource({ uri: 'cb://elicit/bob-legacy-read' }),
        () => bob.client.callTool({ name: 'cb:elicit', arguments: { tag: 'bob-legacy' } }),
      ];
      const during: unknown[] = [];
      for (const ask of asking) during.push(await ask());
      expect(holding, "alice's call was in flight throughout").toBe(true);
      expect(textOf((await held) as CallToolResult)).toBe('alice');
      expect(alice.asked).toEqual([]);
      // bob's 2025 session was not asked either (two clients in flight: it cannot be attributed).
      expect(bob.asked).toEqual([]);
      expect(textOf(during[5] as CallToolResult)).toMatch(/^refused bob-legacy: .*cannot be attributed/);
      // Alone, bob's 2025 session is asked, and answers.
      expect(
        textOf((await bob.client.callTool({ name: 'cb:elicit', arguments: { tag: 'bob' } })) as CallToolResult),
      ).toBe('answered bob: {"who":"bob"}');
      expect(bob.asked).toEqual(['asked for bob']);
      expect(alice.asked).toEqual([]);
    });
  },
);

describe('requests routed before they are forwarded run in their own scope too', { timeout: 120_000 }, () => {
  it("bob's read of a URI not listed yet (the gateway lists every upstream to route it) and his subscribe and unsubscribe: their upstream log lines never reach alice", async () => {
    const { url } = await start(0, true);
    const alice = await legacyClient(url, 'alice');
    await alice.client.setLoggingLevel('debug');
    const bob = await legacyClient(url, 'bob');
    await sleep(300);
    alice.logs.length = 0;
    // Two upstreams serve resources and none has been listed: routing cb2://log/y lists them all first.
    const read = await modernRequest<{ result?: { contents: { text: string }[] } }>(
      url,
      'resources/read',
      { uri: 'cb2://log/y' },
      { token: 'bob' },
    );
    expect(read.body.result?.contents[0]?.text).toBe('y');
    // The upstream is subscribed once, for bob, the first subscriber.
    await bob.client.subscribeResource({ uri: 'cb://log/x' });
    await sleep(300);
    expect(alice.logs).toEqual([]);
    // The last subscriber leaving unsubscribes upstream, on his behalf too.
    await bob.client.unsubscribeResource({ uri: 'cb://log/x' });
    await sleep(300);
    expect(alice.logs).toEqual([]);
  });
});
