// Attacks on the gateway's edges (policy file ↔ upstream configuration, reloads, approvals): each test
// failed before its fix.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { jwtAuthenticator } from '../../src/gateway/auth.js';
import { serveGatewayHttp } from '../../src/gateway/http.js';
import { createGateway, gatewayConfigOf, type Gateway } from '../../src/gateway/index.js';
import { loadPolicyFile } from '../../src/policy-file/index.js';
import { PostgresStores } from '../../src/stores/postgres.js';
import type { PendingRecord } from '../../src/stores/types.js';
import { PG_URL, uniqueName } from '../stores/servers.js';
import { cleanupsAfterEach, DOCS, inMemoryClient, stdioUpstream, tempDir, text } from '../harness.js';

const cleanups = cleanupsAfterEach();

function policyFile(data: Record<string, unknown>, dir = tempDir('edge')) {
  const file = join(dir, 'policy.yaml');
  writeFileSync(file, stringify({ version: 1, ...data }));
  return file;
}

async function connect(gateway: Gateway, onElicit?: () => Promise<void | boolean>) {
  const client = await inMemoryClient(
    cleanups,
    gateway,
    onElicit ? { capabilities: { elicitation: { form: {} } } } : {},
  );
  if (onElicit)
    client.setRequestHandler(ElicitRequestSchema, async () => {
      const approve = (await onElicit()) !== false;
      return { action: 'accept', content: { approve } };
    });
  return client;
}

describe('attacks on the gateway edges', { timeout: 120_000 }, () => {
  it('a tool rule selecting an unprefixed upstream by namespace is refused, not silently void', async () => {
    // `namespace: docs` selects the upstream docs for resources and prompts; its tools, shown unprefixed
    // (`echo`), carry no namespace, so the deny selected none of them and `echo` ran.
    const data = {
      gateway: { upstreams: { docs: { ...stdioUpstream(DOCS), prefix: false } } },
      rules: [
        { name: 'no-docs-tools', namespace: 'docs', result: 'deny' },
        { name: 'rest', result: 'allow' },
      ],
    };
    const set = await loadPolicyFile(policyFile(data));
    const config = gatewayConfigOf(set);
    let ran: string | null = null;
    try {
      const gateway = await createGateway({ policy: set, upstreams: config.upstreams, pins: null });
      cleanups.push(() => gateway.close());
      const client = await connect(gateway);
      ran = text(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }));
    } catch (error) {
      expect((error as Error).message).toMatch(/no-docs-tools.*namespace "docs".*prefix: false/s);
    }
    expect(ran).not.toBe('echo: hi');
    expect(ran).toBeNull();
  });

  it("a tool rule naming an unprefixed upstream's tools under its namespace is refused, not silently void", async () => {
    for (const tools of [['docs:echo'], 'docs:*', ['DOCS:Echo']]) {
      const data = {
        gateway: { upstreams: { docs: { ...stdioUpstream(DOCS), prefix: false } } },
        rules: [
          { name: 'no-echo', tools, result: 'deny' },
          { name: 'rest', result: 'allow' },
        ],
      };
      const set = await loadPolicyFile(policyFile(data));
      let ran: string | null = null;
      try {
        const gateway = await createGateway({ policy: set, upstreams: gatewayConfigOf(set).upstreams, pins: null });
        cleanups.push(() => gateway.close());
        const client = await connect(gateway);
        ran = text(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }));
      } catch (error) {
        expect((error as Error).message).toMatch(/no-echo.*prefix: false/s);
      }
      expect(ran, JSON.stringify(tools)).toBeNull();
    }
  });

  it("tool metadata and schemas declared as an unprefixed upstream's 'docs:echo' are refused, not silently void", async () => {
    // The schema meant to keep `text` short was applied to a tool named `docs:echo`, which no upstream offers.
    const data = {
      gateway: { upstreams: { docs: { ...stdioUpstream(DOCS), prefix: false } } },
      tools: {
        'docs:echo': { parameters: { type: 'object', properties: { text: { type: 'string', maxLength: 2 } } } },
      },
      rules: [{ name: 'rest', result: 'allow' }],
    };
    const set = await loadPolicyFile(policyFile(data));
    let ran: string | null = null;
    try {
      const gateway = await createGateway({ policy: set, upstreams: gatewayConfigOf(set).upstreams, pins: null });
      cleanups.push(() => gateway.close());
      const client = await connect(gateway);
      ran = text(await client.callTool({ name: 'echo', arguments: { text: 'a long text' } }));
    } catch (error) {
      expect((error as Error).message).toMatch(/docs:echo.*prefix: false/s);
    }
    expect(ran).toBeNull();
  });

  it('a prompt completion approved while a reload came in is decided again as a completion (unknown arguments refuse)', async () => {
    const dir = tempDir('edge');
    const upstreams = { docs: stdioUpstream(DOCS) };
    const set = await loadPolicyFile(
      policyFile({ gateway: { upstreams }, prompts: [{ name: 'ask-prompts', result: 'ask' }] }, dir),
    );
    const gateway = await createGateway({ policy: set, upstreams: gatewayConfigOf(set).upstreams, pins: null });
    cleanups.push(() => gateway.close());
    // Under the new policy a completion that does not state `topic` cannot be judged by no-secret-topic.
    const stricter = join(dir, 'stricter.yaml');
    writeFileSync(
      stricter,
      stringify({
        version: 1,
        gateway: { upstreams },
        prompts: [
          { name: 'no-secret-topic', prompts: 'summarise', when: { topic: { equals: 'secret' } }, result: 'deny' },
          { name: 'rest', result: 'allow' },
        ],
      }),
    );
    const client = await connect(gateway, async () => {
      expect((await gateway.reload(stricter)).ok).toBe(true);
    });
    const complete = () =>
      client.complete({ ref: { type: 'ref/prompt', name: 'docs:summarise' }, argument: { name: 'topic', value: 'p' } });
    await expect(complete()).rejects.toThrow(/no-secret-topic/);
    // Without the reload in between, the new policy refuses it alike.
    await expect(complete()).rejects.toThrow(/no-secret-topic/);
  });

  it('a prompt approved while a reload came in that asks under another rule is not run on the old answer', async () => {
    // Prompts are decided through the gate like tool calls: an approval given under ask-prompts does not
    // count under the reloaded policy's security-review; the person is asked again, and that answer decides.
    const dir = tempDir('edge');
    const upstreams = { docs: stdioUpstream(DOCS) };
    const set = await loadPolicyFile(
      policyFile({ gateway: { upstreams }, prompts: [{ name: 'ask-prompts', result: 'ask' }] }, dir),
    );
    const gateway = await createGateway({ policy: set, upstreams: gatewayConfigOf(set).upstreams, pins: null });
    cleanups.push(() => gateway.close());
    const other = join(dir, 'other-ask.yaml');
    writeFileSync(
      other,
      stringify({ version: 1, gateway: { upstreams }, prompts: [{ name: 'security-review', result: 'ask' }] }),
    );
    let asked = 0;
    const client = await connect(gateway, async () => {
      // Approved under ask-prompts (and the policy reloaded meanwhile); refused when asked again.
      if (asked++ > 0) return false;
      expect((await gateway.reload(other)).ok).toBe(true);
      return true;
    });
    const get = () => client.getPrompt({ name: 'docs:summarise', arguments: { topic: 'p' } });
    await expect(get()).rejects.toThrow(/security-review/);
    expect(asked).toBe(2);
    // Asked under the rule in force and approved, it runs.
    asked = 0;
    const approving = await connect(gateway, async () => {
      asked++;
    });
    await expect(approving.getPrompt({ name: 'docs:summarise', arguments: { topic: 'p' } })).resolves.toBeDefined();
    expect(asked).toBe(1);
  });

  it('completing a resource template is decided as reaching its URI: a deny on the folder refuses it', async () => {
    const upstreams = { docs: stdioUpstream(DOCS) };
    const deny = await loadPolicyFile(
      policyFile({
        gateway: { upstreams },
        resources: [
          { name: 'no-pages', uri: 'docs://public/pages/**', result: 'deny' },
          { name: 'rest', result: 'allow' },
        ],
      }),
    );
    const gateway = await createGateway({ policy: deny, upstreams: gatewayConfigOf(deny).upstreams, pins: null });
    cleanups.push(() => gateway.close());
    const client = await connect(gateway);
    const complete = () =>
      client.complete({
        ref: { type: 'ref/resource', uri: 'docs://public/pages/{name}' },
        argument: { name: 'name', value: 'in' },
      });
    await expect(complete()).rejects.toThrow(/no-pages/);
    // Without the deny the same completion is forwarded.
    expect(
      (await gateway.reload(policyFile({ gateway: { upstreams }, resources: [{ name: 'rest', result: 'allow' }] }))).ok,
    ).toBe(true);
    expect((await complete()).completion.values).toEqual(['intro', 'install']);
  });

  it("the gateway's /approvals answers the gateway's own requests only, not a runner's in a shared store", async () => {
    // toolgate serve and the gateway share one PostgreSQL store; the inbox names ana as acme's approver.
    // A token with the gateway's approver scope answered the runner's request past the inbox's rules.
    const stores = new PostgresStores({ connectionString: PG_URL, schema: uniqueName('edge') });
    await stores.migrate();
    cleanups.push(async () => {
      await stores.dropSchema();
      await stores.close();
    });
    const now = Date.now();
    const runnerRecord: PendingRecord = {
      id: 'runner-approval-1',
      kind: 'tool',
      binding: {
        kind: 'tool',
        owner: { kind: 'run', id: 'run-1' },
        agent: 'support',
        callId: 'c1',
        tool: 'refund',
        argsHash: 'x'.repeat(64),
        policyVersion: null,
        expiresAt: now + 600_000,
        nonce: 'n1',
        rule: 'refunds-ask',
        pin: null,
        caller: 'cy',
        tenant: 'acme',
      },
      toolName: 'refund',
      canonical: 'refund',
      parameters: { amount: 5000 },
      agent: 'support',
      tenant: 'acme',
      caller: 'cy',
      runId: 'run-1',
      rule: 'refunds-ask',
      reason: 'a person approves refunds',
      source: 'runner',
      createdAt: now,
      expiresAt: now + 600_000,
      status: 'pending',
      answer: null,
      answeredAt: null,
    };
    await stores.approvals.put(runnerRecord);
    const set = await loadPolicyFile(policyFile({ gateway: { upstreams: { docs: stdioUpstream(DOCS) } } }));
    const gateway = await createGateway({ policy: set, upstreams: gatewayConfigOf(set).upstreams, pins: null });
    cleanups.push(() => gateway.close());
    const secret = 'a test key of the gateway tokens';
    const http = await serveGatewayHttp(gateway, {
      port: 0,
      authenticate: jwtAuthenticator({ secret, algorithms: ['HS256'] }),
      audience: 'gateway',
      approvals: { store: stores.approvals },
    });
    cleanups.push(() => http.close());
    const token = await new SignJWT({ sub: 'bob', aud: 'gateway', scope: 'toolgate:approve' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(secret));
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const listed = (await (await fetch(new URL('/approvals', http.url), { headers })).json()) as {
      pending: PendingRecord[];
    };
    expect(listed.pending.map((r) => r.id)).not.toContain(runnerRecord.id);
    const answered = await fetch(new URL(`/approvals/${runnerRecord.id}`, http.url), {
      method: 'POST',
      headers,
      body: JSON.stringify({ effect: 'allow' }),
    });
    expect(answered.status).toBe(404);
    expect((await stores.approvals.get(runnerRecord.id))?.status).toBe('pending');
  });

  it("over HTTP a reload that narrows the agent's tools applies to bearer-token requests", async () => {
    // serveGatewayHttp read the gateway's context once, at start: a reload taking docs:echo away from
    // the agent changed nothing for token holders.
    const dir = tempDir('edge');
    const upstreams = { docs: stdioUpstream(DOCS) };
    const rules = [{ name: 'docs', namespace: 'docs', result: 'allow' }];
    const scopes = { docs: ['docs:echo', 'docs:slow'] };
    const set = await loadPolicyFile(
      policyFile(
        { gateway: { upstreams }, agents: { assistant: { tools: ['docs:echo', 'docs:slow'] } }, scopes, rules },
        dir,
      ),
    );
    const gateway = await createGateway({
      policy: set,
      upstreams: gatewayConfigOf(set).upstreams,
      pins: null,
      context: set.context({ agent: 'assistant' }),
    });
    cleanups.push(() => gateway.close());
    const secret = 'a test key of the gateway tokens';
    const http = await serveGatewayHttp(gateway, {
      port: 0,
      authenticate: jwtAuthenticator({ secret, algorithms: ['HS256'] }),
      audience: 'gateway',
      context: (auth) => ({ caller: { id: auth.clientId, scopes: gateway.policy.toolsForScopes(auth.scopes) } }),
    });
    cleanups.push(() => http.close());
    const token = await new SignJWT({ sub: 'alice', aud: 'gateway', scope: 'docs' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(secret));
    const client = new Client({ name: 'attacker', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(http.url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    cleanups.push(() => client.close());
    const echo = () => client.callTool({ name: 'docs:echo', arguments: { text: 'hi' } });
    expect(text(await echo())).toBe('echo: hi');
    const narrower = join(dir, 'narrower.yaml');
    writeFileSync(
      narrower,
      stringify({ version: 1, gateway: { upstreams }, agents: { assistant: { tools: ['docs:slow'] } }, scopes, rules }),
    );
    const reloaded = await gateway.reload(narrower, { context: (policy) => policy.context({ agent: 'assistant' }) });
    expect(reloaded.ok).toBe(true);
    const after = (await echo()) as CallToolResult;
    expect(after.isError).toBe(true);
    expect(text(after)).not.toBe('echo: hi');
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('docs:echo');
  });

  it('a rug pull while the lock file cannot be read is refused, not let through unpinned', async () => {
    // checkPins threw on the unreadable lock file before recording the drift, so the changed echo ran.
    const dir = tempDir('edge');
    const set = await loadPolicyFile(
      policyFile(
        {
          gateway: { upstreams: { docs: stdioUpstream(DOCS) } },
          rules: [{ name: 'docs', namespace: 'docs', result: 'allow' }],
        },
        dir,
      ),
    );
    const config = gatewayConfigOf(set);
    const gateway = await createGateway({ policy: set, upstreams: config.upstreams, pins: config.pins });
    cleanups.push(() => gateway.close());
    const client = await connect(gateway);
    expect(text(await client.callTool({ name: 'docs:echo', arguments: { text: 'x' } }))).toBe('echo: x');
    // Edited by hand (the sha256 no longer matches): the lock cannot be trusted.
    const lock = join(dir, 'policy.lock.json');
    writeFileSync(lock, readFileSync(lock, 'utf8').replace('Echo the text back', 'Echo the text back!'));
    await client.callTool({ name: 'docs:rug_pull', arguments: {} });
    // The new definition is registered (the tool list refreshed) whether or not the pin check could run.
    await expect
      .poll(() => gateway.upstreams.get('docs')?.connection?.definition('docs:echo')?.description, { timeout: 10_000 })
      .toMatch(/IMPORTANT/);
    const after = (await client.callTool({ name: 'docs:echo', arguments: { text: 'x' } })) as CallToolResult;
    expect(text(after)).not.toBe('echo: x');
    expect(after.isError).toBe(true);
    expect(text(after)).toMatch(/lock file cannot be read/);
  });

  it('an approval given before the tool drifted (pin: ask) does not run the drifted tool', async () => {
    // The store approval is bound to caller, tool, arguments and policy version: a rug pull changes none
    // of them, so the answer a person gave for the old echo was consumed by the new one.
    const stores = new PostgresStores({ connectionString: PG_URL, schema: uniqueName('edge') });
    await stores.migrate();
    cleanups.push(async () => {
      await stores.dropSchema();
      await stores.close();
    });
    const dir = tempDir('edge');
    const set = await loadPolicyFile(
      policyFile(
        {
          gateway: { upstreams: { docs: stdioUpstream(DOCS) }, pin: 'ask' },
          rules: [
            { name: 'echo-asks', tools: 'docs:echo', result: 'ask', reason: 'echo needs a person' },
            { name: 'rest', namespace: 'docs', result: 'allow' },
          ],
        },
        dir,
      ),
    );
    const config = gatewayConfigOf(set);
    const gateway = await createGateway({
      policy: set,
      upstreams: config.upstreams,
      pins: config.pins,
      approvals: { store: stores.approvals, nonces: stores.nonces, secret: 'a shared secret of the replicas' },
    });
    cleanups.push(() => gateway.close());
    const client = await connect(gateway);
    const echo = () => client.callTool({ name: 'docs:echo', arguments: { text: 'x' } }) as Promise<CallToolResult>;
    const asked = await echo();
    const id = /request ([0-9a-f]{64})/.exec(text(asked))?.[1];
    expect(id).toBeDefined();
    expect(await stores.approvals.answer(id!, { effect: 'allow', approver: 'bob' })).toBe(true);
    await client.callTool({ name: 'docs:rug_pull', arguments: {} });
    await expect
      .poll(() => gateway.upstreams.get('docs')?.connection?.definition('docs:echo')?.description, { timeout: 10_000 })
      .toMatch(/IMPORTANT/);
    const after = await echo();
    expect(text(after)).not.toBe('echo: x');
    expect(after.isError).toBe(true);
    expect(text(after)).toMatch(/waits for a person's approval.*echo-asks \(drifted definition\)/s);
  });

  it('a reload to a policy whose tool rule selects an unprefixed upstream by namespace is refused', async () => {
    const upstreams = { docs: { ...stdioUpstream(DOCS), prefix: false } };
    const set = await loadPolicyFile(
      policyFile({ gateway: { upstreams }, rules: [{ name: 'rest', result: 'allow' }] }),
    );
    const gateway = await createGateway({ policy: set, upstreams: gatewayConfigOf(set).upstreams, pins: null });
    cleanups.push(() => gateway.close());
    const client = await connect(gateway);
    const next = policyFile({
      gateway: { upstreams },
      rules: [
        { name: 'no-docs-tools', namespace: 'docs', result: 'deny' },
        { name: 'rest', result: 'allow' },
      ],
    });
    const reloaded = await gateway.reload(next);
    expect(reloaded.ok).toBe(false);
    expect(reloaded.ok ? '' : reloaded.error).toMatch(/no-docs-tools.*prefix: false/s);
    // The policy in force stays the one that allows: nothing was swapped in half.
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe('echo: hi');
  });
});
