import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  connectMcpServer,
  createMcpProxy,
  jwtAuthenticator,
  loadPolicyForProxy,
  policyToolMetadata,
  serveMcpProxyHttp,
  type McpAuditRecord,
  type McpProxy,
} from '../../src/adapters/mcp/index.js';
import { ConfigurationError, PermissionPolicy, ToolRegistry } from '../../src/index.js';
import { cleanupsAfterEach, ROOT, tempDir, text } from '../harness.js';

const FS_SERVER = join(ROOT, 'node_modules/.bin/mcp-server-filesystem');
const CLI = join(ROOT, 'src/cli/mcp-proxy.ts');
const FLAKY = join(ROOT, 'test/adapters/fixtures/flaky-server.ts');
const cleanups = cleanupsAfterEach();

/** The proxy CLI as a child process over real stdio, driven by the SDK's Client. */
async function proxyClient(
  args: string[],
  clientOptions: ConstructorParameters<typeof Client>[1] = {},
  entry: string[] = [CLI],
) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', ...entry, ...args],
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'test', version: '1.0.0' }, clientOptions);
  await client.connect(transport);
  cleanups.push(() => client.close());
  return { client, transport, stderr: () => stderr };
}

function sandbox() {
  const root = tempDir('proxy');
  mkdirSync(join(root, 'inbox'));
  writeFileSync(join(root, 'note.txt'), 'hello from the sandbox');
  const policy = join(root, '..', `${root.split('/').pop()}-policy.json`);
  writeFileSync(
    policy,
    JSON.stringify({
      version: 1,
      agents: { 'fs-agent': { tools: ['read_text_file', 'list_directory', 'write_file'] } },
      scopes: { 'files:read': ['read_text_file'] },
      rules: [
        { name: 'reads', tools: ['read_text_file', 'list_directory'], result: 'allow', reason: 'reading is fine' },
        {
          name: 'inbox-writes',
          tools: ['write_file'],
          when: { path: { path: `${join(root, 'inbox')}/**` } },
          result: 'allow',
          reason: 'the inbox is writable',
        },
        { name: 'other-writes', tools: ['write_file'], result: 'deny', reason: 'writes go to the inbox only' },
      ],
    }),
  );
  return { root, policy, audit: `${policy}.audit.jsonl` };
}

describe('toolgate mcp-proxy over real stdio, in front of @modelcontextprotocol/server-filesystem', () => {
  it('lists only permitted tools, refuses a write outside the allowed folder (file not written), lets a read through, audits each decision', async () => {
    const { root, policy, audit } = sandbox();
    const { client } = await proxyClient([
      '--policy',
      policy,
      '--agent',
      'fs-agent',
      '--audit',
      audit,
      '--',
      FS_SERVER,
      root,
    ]);

    const listed = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(listed).toEqual(['list_directory', 'read_text_file', 'write_file']);

    // Inside the upstream's root, so the upstream itself would have written it: the proxy must refuse first.
    const outside = join(root, 'secret.txt');
    const refused = await client.callTool({
      name: 'write_file',
      arguments: { path: outside, content: 'should not be written' },
    });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/refused \(rule "other-writes"\): writes go to the inbox only/);
    expect(existsSync(outside)).toBe(false);

    const hidden = await client.callTool({
      name: 'move_file',
      arguments: { source: join(root, 'note.txt'), destination: join(root, 'moved.txt') },
    });
    expect(hidden.isError).toBe(true);
    expect(text(hidden)).toMatch(/layer not_declared/);
    expect(existsSync(join(root, 'note.txt'))).toBe(true);

    const read = await client.callTool({ name: 'read_text_file', arguments: { path: join(root, 'note.txt') } });
    expect(read.isError).toBeFalsy();
    expect(text(read)).toBe('hello from the sandbox');

    const inboxWrite = await client.callTool({
      name: 'write_file',
      arguments: { path: join(root, 'inbox', 'ok.txt'), content: 'fine' },
    });
    expect(inboxWrite.isError).toBeFalsy();
    expect(readFileSync(join(root, 'inbox', 'ok.txt'), 'utf8')).toBe('fine');

    const records = readFileSync(audit, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as McpAuditRecord & { type: string })
      // The gateway's audit: one `tool` record per decision, besides its `mode` and `upstream` records.
      .filter((record) => record.type === 'tool');
    expect(records.map((r) => [r.decision.tool, r.decision.effect, r.status])).toEqual([
      ['write_file', 'deny', 'refused'],
      ['move_file', 'deny', 'refused'],
      ['read_text_file', 'allow', 'ok'],
      ['write_file', 'allow', 'ok'],
    ]);
  });

  it("narrows by the caller scopes given on the command line, mapped by the file's scope map", async () => {
    const { root, policy } = sandbox();
    const { client } = await proxyClient([
      '--policy',
      policy,
      '--agent',
      'fs-agent',
      '--scopes',
      'files:read',
      '--',
      FS_SERVER,
      root,
    ]);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['read_text_file']);
    const refused = await client.callTool({ name: 'list_directory', arguments: { path: root } });
    expect(text(refused)).toMatch(/layer caller/);
  });

  it('runs as `toolgate mcp-proxy` from the main command too', async () => {
    const { root, policy } = sandbox();
    const { client } = await proxyClient(
      ['--policy', policy, '--agent', 'fs-agent', '--scopes', 'files:read', '--', FS_SERVER, root],
      {},
      [join(ROOT, 'src/cli/main.ts'), 'mcp-proxy'],
    );
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['read_text_file']);
    expect(text(await client.callTool({ name: 'read_text_file', arguments: { path: join(root, 'note.txt') } }))).toBe(
      'hello from the sandbox',
    );
  });

  it('gives a clear error and shuts down cleanly when the upstream crashes mid-call', async () => {
    const { policy } = sandbox();
    writeFileSync(policy, JSON.stringify({ version: 1, fallback: 'allow' }));
    const { client, transport, stderr } = await proxyClient([
      '--policy',
      policy,
      '--',
      process.execPath,
      '--import',
      'tsx',
      FLAKY,
    ]);
    const exited = new Promise<void>((resolve) => (transport.onclose = () => resolve()));
    const result = await client.callTool({ name: 'crash', arguments: {} });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/upstream "upstream" went down during the call \(its connection closed/);
    await exited;
    expect(stderr()).toMatch(/the upstream MCP server exited; shutting down/);
  });

  it('gives a clear error when the upstream hangs past the call timeout, and keeps serving', async () => {
    const { policy } = sandbox();
    writeFileSync(policy, JSON.stringify({ version: 1, fallback: 'allow' }));
    const { client } = await proxyClient([
      '--policy',
      policy,
      '--call-timeout',
      '300',
      '--',
      process.execPath,
      '--import',
      'tsx',
      FLAKY,
    ]);
    const result = await client.callTool({ name: 'hang', arguments: {} });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/did not answer within 300 ms: the outcome of the call is unknown/);
    expect(text(result)).toMatch(/before any retry/);
    expect(text(await client.callTool({ name: 'echo', arguments: {} }))).toBe('echo');
  });

  it('serves --http with JWT auth: the token scopes go through the policy file scope map; no token is a 401', async () => {
    const { root, policy } = sandbox();
    const secretFile = `${policy}.secret`;
    writeFileSync(secretFile, 'a-cli-test-secret-of-at-least-32-bytes\n');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        CLI,
        '--policy',
        policy,
        '--agent',
        'fs-agent',
        '--http',
        '0',
        '--jwt-secret-file',
        secretFile,
        '--jwt-audience',
        'toolgate-gateway',
        '--',
        FS_SERVER,
        root,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    cleanups.push(async () => {
      child.kill('SIGTERM');
      await exited;
    });
    const url = await new Promise<URL>((resolve, reject) => {
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => {
        stderr += c.toString();
        const m = /listening on (\S+)/.exec(stderr);
        if (m) resolve(new URL(m[1]!));
      });
      child.on('close', () => reject(new Error(`the proxy exited: ${stderr}`)));
    });
    const none = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(none.status).toBe(401);
    const jwt = await new SignJWT({ scope: 'files:read' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('carol')
      .setAudience('toolgate-gateway')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('a-cli-test-secret-of-at-least-32-bytes'));
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${jwt}` } } }),
    );
    cleanups.push(() => client.close());
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['read_text_file']);
    const refused = await client.callTool({
      name: 'write_file',
      arguments: { path: join(root, 'inbox', 'x.txt'), content: 'x' },
    });
    expect(text(refused)).toMatch(/layer caller/);
    expect(existsSync(join(root, 'inbox', 'x.txt'))).toBe(false);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('refuses to start on a bad policy file or an agent it does not name (exit code 2)', async () => {
    const { root, policy } = sandbox();
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
        child.on('close', (code) => resolve({ code, stderr }));
      });
    const unknownAgent = await run(['--policy', policy, '--agent', 'nobody', '--', FS_SERVER, root]);
    expect(unknownAgent.code).toBe(2);
    expect(unknownAgent.stderr).toMatch(/agent "nobody" is not declared in the policy file/);
    writeFileSync(policy, '{"version": 1, "rules": [{"name": "x"}]}');
    const bad = await run(['--policy', policy, '--', FS_SERVER, root]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/was refused:\n.*policy\.json:1:\d+: /);
  });
});

/** An upstream MCP server in-process, with a tool a rule answers `ask` for. */
async function inProcessProxy(options: { audit?: (r: McpAuditRecord) => void } = {}) {
  const upstream = new McpServer({ name: 'shop', version: '1.0.0' });
  const ran: string[] = [];
  upstream.registerTool('search', { description: 'Search', inputSchema: { q: z.string() } }, async ({ q }) => {
    ran.push(`search:${q}`);
    return { content: [{ type: 'text', text: `found ${q}` }] };
  });
  upstream.registerTool('refund', { description: 'Refund', inputSchema: { order: z.string() } }, async ({ order }) => {
    ran.push(`refund:${order}`);
    return { content: [{ type: 'text', text: `refunded ${order}` }] };
  });
  const [up, down] = InMemoryTransport.createLinkedPair();
  await upstream.connect(up);
  const policy = new PermissionPolicy({
    rules: [
      { name: 'search', tools: ['search'], result: 'allow' },
      { name: 'refunds', tools: ['refund'], result: 'ask', reason: 'refunds need a person' },
    ],
  });
  const proxy = await createMcpProxy({
    upstream: { transport: down },
    policy,
    approvalTimeoutMs: 2_000,
    ...(options.audit ? { audit: options.audit } : {}),
  });
  cleanups.push(() => proxy.close());
  return { proxy, ran };
}

async function downstream(
  proxy: McpProxy,
  elicit?: (message: string) => { action: 'accept' | 'decline'; content?: Record<string, boolean> },
) {
  const client = new Client(
    { name: 'test', version: '1.0.0' },
    elicit ? { capabilities: { elicitation: { form: {} } } } : {},
  );
  if (elicit) client.setRequestHandler(ElicitRequestSchema, async (request) => elicit(request.params.message));
  const [a, b] = InMemoryTransport.createLinkedPair();
  await proxy.createServer().connect(b);
  await client.connect(a);
  cleanups.push(() => client.close());
  return client;
}

describe('createMcpProxy: ask → MCP elicitation', () => {
  it('puts an ask to the user by elicitation; accepted → forwarded, declined → refused and never forwarded', async () => {
    const { proxy, ran } = await inProcessProxy();
    const prompts: string[] = [];
    const yes = await downstream(
      proxy,
      (message) => (prompts.push(message), { action: 'accept', content: { approve: true } }),
    );
    expect(text(await yes.callTool({ name: 'refund', arguments: { order: 'o-1' } }))).toBe('refunded o-1');
    expect(prompts[0]).toMatch(/refund\(\{"order":"o-1"\}\).*refunds need a person/);
    const no = await downstream(proxy, () => ({ action: 'decline' }));
    const refused = await no.callTool({ name: 'refund', arguments: { order: 'o-2' } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/the approver denied the call/);
    const unchecked = await downstream(proxy, () => ({ action: 'accept', content: { approve: false } }));
    expect((await unchecked.callTool({ name: 'refund', arguments: { order: 'o-3' } })).isError).toBe(true);
    expect(ran).toEqual(['refund:o-1']);
  });

  it('denies an ask when the client cannot elicit; the upstream never sees it; every decision is audited', async () => {
    const records: McpAuditRecord[] = [];
    const { proxy, ran } = await inProcessProxy({ audit: (r) => records.push(r) });
    const client = await downstream(proxy);
    const refused = await client.callTool({ name: 'refund', arguments: { order: 'o-9' } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/approval was required and no permission handler is set/);
    expect(text(await client.callTool({ name: 'search', arguments: { q: 'lamp' } }))).toBe('found lamp');
    expect(ran).toEqual(['search:lamp']);
    expect(records.map((r) => [r.decision.tool, r.decision.effect, r.status])).toEqual([
      ['refund', 'deny', 'refused'],
      ['search', 'allow', 'ok'],
    ]);
  });
});

describe('createMcpProxy over Streamable HTTP with JWT bearer auth', () => {
  const secret = 'a-test-secret-of-at-least-32-bytes!!';
  const token = (claims: Record<string, unknown>, key = secret) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(key));

  async function serve() {
    const { proxy, ran } = await inProcessProxy();
    const http = await serveMcpProxyHttp(proxy, {
      port: 0,
      authenticate: jwtAuthenticator({ secret, algorithms: ['HS256'] }),
    });
    cleanups.push(() => http.close());
    return { http, ran };
  }

  it('answers 401 with no token or a bad one, and forwards nothing', async () => {
    const { http, ran } = await serve();
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'search', arguments: { q: 'x' } },
    });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const none = await fetch(http.url, { method: 'POST', headers, body });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const forged = await fetch(http.url, {
      method: 'POST',
      headers: {
        ...headers,
        authorization: `Bearer ${await token({ scope: 'search' }, 'another-secret-of-at-least-32-bytes!!')}`,
      },
      body,
    });
    expect(forged.status).toBe(401);
    const garbage = await fetch(http.url, {
      method: 'POST',
      headers: { ...headers, authorization: 'Bearer not.a.jwt' },
      body,
    });
    expect(garbage.status).toBe(401);
    expect(ran).toEqual([]);
  });

  it('takes the caller layer from the token scopes', async () => {
    const { http, ran } = await serve();
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(http.url, {
        requestInit: { headers: { authorization: `Bearer ${await token({ scope: 'search' })}` } },
      }),
    );
    cleanups.push(() => client.close());
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['search']);
    expect(text(await client.callTool({ name: 'search', arguments: { q: 'lamp' } }))).toBe('found lamp');
    const refused = await client.callTool({ name: 'refund', arguments: { order: 'o-1' } });
    expect(text(refused)).toMatch(/layer caller/);
    expect(ran).toEqual(['search:lamp']);
  });

  it('is reachable by toolgate/mcp as a client over Streamable HTTP (connectMcpServer with a url)', async () => {
    const { http, ran } = await serve();
    const registry = new ToolRegistry();
    const shop = await connectMcpServer(registry, {
      url: http.url,
      headers: { authorization: `Bearer ${await token({ scope: 'search' })}` },
      prefix: 'shop',
    });
    cleanups.push(() => shop.close());
    expect(shop.tools).toEqual(['shop:search']);
    expect(await registry.invoke('shop:search', { q: 'desk' }, {})).toMatchObject({
      status: 'ok',
      content: 'found desk',
    });
    expect(ran).toEqual(['search:desk']);
  });

  it('keeps a session to the subject that opened it', async () => {
    const { http, ran } = await serve();
    const transport = new StreamableHTTPClientTransport(http.url, {
      requestInit: { headers: { authorization: `Bearer ${await token({ scope: 'search' })}` } },
    });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(transport);
    cleanups.push(() => client.close());
    const bob = await new SignJWT({ scope: 'search' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('bob')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(secret));
    const hijack = await fetch(http.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${bob}`,
        'mcp-session-id': transport.sessionId!,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'search', arguments: { q: 'stolen' } },
      }),
    });
    expect(hijack.status).toBe(403);
    expect(ran).toEqual([]);
  });

  it('puts an ask to the HTTP client by elicitation over its session', async () => {
    const { http, ran } = await serve();
    const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { approve: true } }));
    await client.connect(
      new StreamableHTTPClientTransport(http.url, {
        requestInit: { headers: { authorization: `Bearer ${await token({ scope: 'search refund' })}` } },
      }),
    );
    cleanups.push(() => client.close());
    expect(text(await client.callTool({ name: 'refund', arguments: { order: 'o-5' } }))).toBe('refunded o-5');
    expect(ran).toEqual(['refund:o-5']);
  });

  it('refuses a request whose Host or Origin is not loopback (DNS rebinding), before authentication', async () => {
    const { http, ran } = await serve();
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    });
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${await token({ scope: 'search' })}`,
    };
    const evil = await fetch(http.url, {
      method: 'POST',
      headers: { ...headers, origin: 'http://evil.example' },
      body,
    });
    expect(evil.status).toBe(403);
    const ok = await fetch(http.url, {
      method: 'POST',
      headers: { ...headers, origin: `http://localhost:${http.url.port}` },
      body,
    });
    expect(ok.status).toBe(200);
    expect(ran).toEqual([]);
  });

  it('listens on loopback only unless told otherwise', async () => {
    const { proxy } = await inProcessProxy();
    await expect(
      serveMcpProxyHttp(proxy, {
        port: 0,
        host: '0.0.0.0',
        authenticate: async () => ({ token: '', clientId: 'x', scopes: [] }),
      }),
    ).rejects.toThrow(/loopback/);
  });
});

describe('loadPolicyForProxy', () => {
  it('reads a toolgate policy file; a refused one is a ConfigurationError listing the problems with positions', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-policy-'));
    const file = join(dir, 'p.yaml');
    writeFileSync(
      file,
      'version: 1\ntools:\n  write_file: { tags: [destructive, file_system] }\nrules:\n  - { name: w, tools: write_file, result: ask }\n',
    );
    const set = await loadPolicyForProxy(file);
    expect(set.policy.rules.map((r) => r.name)).toEqual(['w']);
    expect(policyToolMetadata(set)).toEqual({ write_file: { tags: ['destructive', 'file_system'] } });
    writeFileSync(file, 'version: 1\nrules:\n  - { name: x, result: maybe }\n');
    await expect(loadPolicyForProxy(file)).rejects.toThrow(ConfigurationError);
    await expect(loadPolicyForProxy(file)).rejects.toThrow(/p\.yaml:3:\d+/);
    await expect(loadPolicyForProxy(join(dir, 'missing.yaml'))).rejects.toThrow(/cannot read/);
  });
});
