/**
 * Issue 11, the gateway's edges: what the policy says must be what the gateway does, over stdio and HTTP,
 * in front of the real @modelcontextprotocol/server-filesystem (files and folders made here, in a temp dir).
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createMcpProxy,
  jwtAuthenticator,
  serveMcpProxyHttp,
  type McpAuditRecord,
} from '../../src/adapters/mcp/index.js';
import { elicitationApprover } from '../../src/gateway/index.js';
import { defineTool, PermissionPolicy, ToolAllowlist, type PermissionRequest } from '../../src/index.js';
import { explainCall, loadPolicyFile } from '../../src/policy-file/index.js';
import { FS_SERVER, hs256, httpClient, httpGateway, runGateway, stdioGateway } from './fixtures/gateway.js';
import { cleanupsAfterEach, tempDir, text } from '../harness.js';

const cleanups = cleanupsAfterEach();

const SECRET = 'an-edge-test-secret-of-at-least-32-bytes';

/** An in-process upstream with three tools, each recording that it ran. */
async function shop() {
  const upstream = new McpServer({ name: 'shop', version: '1.0.0' });
  const ran: string[] = [];
  for (const name of ['search', 'refund', 'delete_all']) {
    upstream.registerTool(name, { description: name, inputSchema: { q: z.string() } }, async ({ q }) => {
      ran.push(`${name}:${q}`);
      return { content: [{ type: 'text', text: `${name} ${q}` }] };
    });
  }
  const [up, down] = InMemoryTransport.createLinkedPair();
  await upstream.connect(up);
  return { down, ran };
}

describe('serveMcpProxyHttp: the token narrows the proxy, never replaces it', () => {
  it("keeps the proxy's agent and tenant layers: a token scoped to every tool sees and runs only what they permit", async () => {
    const { down, ran } = await shop();
    const proxy = await createMcpProxy({
      upstream: { transport: down },
      context: {
        agent: { name: 'searcher', tools: ['search', 'refund'] },
        tenant: { id: 'acme', tools: ['search', 'delete_all'] },
      },
    });
    cleanups.push(() => proxy.close());
    const http = await serveMcpProxyHttp(proxy, {
      port: 0,
      authenticate: jwtAuthenticator({ secret: SECRET, algorithms: ['HS256'] }),
    });
    cleanups.push(() => http.close());
    const client = await httpClient(
      http.url,
      await hs256({ sub: 'mallory', scope: 'search refund delete_all' }, SECRET),
      cleanups,
    );
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['search']);
    const deleted = await client.callTool({ name: 'delete_all', arguments: { q: 'everything' } });
    expect(deleted.isError).toBe(true);
    expect(text(deleted)).toMatch(/layer not_declared/);
    const refund = await client.callTool({ name: 'refund', arguments: { q: 'o-1' } });
    expect(text(refund)).toMatch(/layer tenant/);
    expect(text(await client.callTool({ name: 'search', arguments: { q: 'lamp' } }))).toBe('search lamp');
    // A token's narrower scope still narrows.
    const narrow = await httpClient(http.url, await hs256({ sub: 'bob', scope: 'refund' }, SECRET), cleanups);
    expect((await narrow.listTools()).tools).toEqual([]);
    expect(text(await narrow.callTool({ name: 'search', arguments: { q: 'x' } }))).toMatch(/layer caller/);
    expect(ran).toEqual(['search:lamp']);
  });

  it('intersects a caller layer the proxy states with the token scopes, and refuses to start over a resolved allowlist', async () => {
    const { down, ran } = await shop();
    const proxy = await createMcpProxy({
      upstream: { transport: down },
      context: { caller: { id: 'service', scopes: ['search'] } },
    });
    cleanups.push(() => proxy.close());
    const http = await serveMcpProxyHttp(proxy, {
      port: 0,
      authenticate: jwtAuthenticator({ secret: SECRET, algorithms: ['HS256'] }),
      context: (auth) => ({ agent: { name: 'any', tools: ['search', 'delete_all'] }, caller: { scopes: auth.scopes } }),
    });
    cleanups.push(() => http.close());
    const client = await httpClient(http.url, await hs256({ sub: 'm', scope: 'search delete_all' }, SECRET), cleanups);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['search']);
    expect(text(await client.callTool({ name: 'delete_all', arguments: { q: 'x' } }))).toMatch(/layer caller/);
    expect(ran).toEqual([]);

    const second = await shop();
    const fixed = await createMcpProxy({
      upstream: { transport: second.down },
      context: { allowlist: ToolAllowlist.resolve(['search']) },
    });
    cleanups.push(() => fixed.close());
    await expect(
      serveMcpProxyHttp(fixed, { port: 0, authenticate: jwtAuthenticator({ secret: SECRET, algorithms: ['HS256'] }) }),
    ).rejects.toThrow(/resolved "allowlist"/);
  });
});

describe('jwtAuthenticator and sessions: a token names one subject, by issuer, claim and value', () => {
  async function serve() {
    const { down, ran } = await shop();
    const proxy = await createMcpProxy({ upstream: { transport: down } });
    cleanups.push(() => proxy.close());
    const http = await serveMcpProxyHttp(proxy, {
      port: 0,
      authenticate: jwtAuthenticator({ secret: SECRET, algorithms: ['HS256'] }),
    });
    cleanups.push(() => http.close());
    return { http, ran };
  }
  const post = (url: URL, token: string, body: unknown, session?: string) =>
    fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': '2025-06-18',
        ...(session ? { 'mcp-session-id': session } : {}),
      },
      body: JSON.stringify(body),
    });
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
  };
  const call = (q: string) => ({
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: { name: 'search', arguments: { q } },
  });

  it('refuses a token with no sub, client_id or azp (401), instead of calling it "anonymous"', async () => {
    const { http, ran } = await serve();
    const nobody = await hs256({ scope: 'search' }, SECRET);
    expect((await post(http.url, nobody, initialize)).status).toBe(401);
    expect(ran).toEqual([]);
  });

  it('does not let a token whose client_id equals another token’s sub into that session', async () => {
    const { http, ran } = await serve();
    const transport = new StreamableHTTPClientTransport(http.url, {
      requestInit: { headers: { authorization: `Bearer ${await hs256({ sub: 'alice', scope: 'search' }, SECRET)}` } },
    });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(transport);
    cleanups.push(() => client.close());
    const lookalike = await hs256({ client_id: 'alice', scope: 'search' }, SECRET);
    expect((await post(http.url, lookalike, call('stolen'), transport.sessionId)).status).toBe(403);
    const otherIssuer = await hs256({ iss: 'https://other.test', sub: 'alice', scope: 'search' }, SECRET);
    expect((await post(http.url, otherIssuer, call('stolen'), transport.sessionId)).status).toBe(403);
    expect(text(await client.callTool({ name: 'search', arguments: { q: 'mine' } }))).toBe('search mine');
    expect(ran).toEqual(['search:mine']);
  });
});

describe('the approval prompt shows the call that runs', () => {
  it('escapes bidi controls and other invisible characters from the arguments, tool and reason', async () => {
    const { down, ran } = await shop();
    const proxy = await createMcpProxy({
      upstream: { transport: down },
      policy: new PermissionPolicy({
        rules: [{ name: 'refunds', tools: ['refund'], result: 'ask', reason: 'a person decides' }],
      }),
    });
    cleanups.push(() => proxy.close());
    const prompts: string[] = [];
    const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      prompts.push(
        request.params.message,
        JSON.stringify('requestedSchema' in request.params ? request.params.requestedSchema : null),
      );
      return { action: 'decline' };
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await proxy.createServer().connect(b);
    await client.connect(a);
    cleanups.push(() => client.close());
    // Rendered raw, U+202E would show "o-1exe.fdp" reversed as an innocent-looking order id.
    await client.callTool({ name: 'refund', arguments: { q: 'o-1\u202Epdf.exe\u200B\u2066x\u2069' } });
    expect(prompts).toHaveLength(2);
    for (const prompt of prompts) expect(prompt).not.toMatch(/[\u202E\u200B\u2066\u2069]/u);
    expect(prompts[0]).toContain('o-1\\u{202E}pdf.exe\\u{200B}\\u{2066}x\\u{2069}');
    expect(ran).toEqual([]);
  });
});

describe('the approval prompt waits as long as the gateway was told', () => {
  it('elicitationApprover denies when the person has not answered within its timeout', async () => {
    const server = new McpServer({ name: 'gate', version: '1.0.0' });
    const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    let asked = 0;
    client.setRequestHandler(ElicitRequestSchema, () => {
      asked++;
      return new Promise<never>(() => {}); // a person who never answers
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.server.connect(b);
    await client.connect(a);
    cleanups.push(() => client.close());
    const approver = elicitationApprover(server.server, 200);
    expect(typeof approver).toBe('function');
    const request: PermissionRequest = {
      toolName: 'refund',
      parameters: { order: 'A-1' },
      reason: 'a person decides',
      ruleName: 'refunds',
      metadata: defineTool({ name: 'refund', parameters: { type: 'object' }, execute: () => 'ok' }).metadata,
      callId: 'c1',
      agent: 'agent',
      tenant: null,
      runId: null,
    };
    // The default (120 s) would outlast the test's own timeout.
    expect(await (approver as (r: PermissionRequest) => Promise<string>)(request)).toBe('deny');
    expect(asked).toBe(1);
  });
});

/** A sandbox for the filesystem server and a policy file with `tools:` metadata and a parameters schema. */
function sandbox() {
  const root = tempDir('edges');
  mkdirSync(join(root, 'inbox'));
  writeFileSync(join(root, 'note.txt'), 'a note');
  const policy = `${root}.policy.yaml`;
  writeFileSync(
    policy,
    [
      'version: 1',
      'tools:',
      // Spelled unlike the upstream's names: applied by canonical form.
      '  Read_Text_File: { tags: [privileged] }',
      '  WRITE_FILE:',
      '    parameters:',
      '      type: object',
      '      properties: { path: { type: string, pattern: "\\\\.txt$" } }',
      '      required: [path]',
      'agents:',
      '  fs-agent: { tools: [read_text_file, write_file, list_directory] }',
      'scopes:',
      '  files: [read_text_file, write_file, list_directory]',
      'rules:',
      '  - { name: no-privileged, tags: [privileged], result: deny, reason: privileged tools are off }',
      '  - { name: listing, tools: [list_directory], result: allow }',
      `  - { name: inbox, tools: [write_file], when: { path: { path: "${root}/inbox/**" } }, result: allow }`,
    ].join('\n'),
  );
  return { root, policy, audit: `${root}.audit.jsonl` };
}

/** The calls both routes decide, with what the filesystem server would do with them. */
function calls(root: string) {
  return [
    { name: 'read_text_file', arguments: { path: join(root, 'note.txt') } },
    { name: 'list_directory', arguments: { path: root } },
    { name: 'write_file', arguments: { path: join(root, 'inbox', 'mail.md'), content: 'x' } },
    { name: 'write_file', arguments: { path: join(root, 'inbox', 'mail.txt'), content: 'x' } },
    { name: 'write_file', arguments: { path: join(root, 'other.txt'), content: 'x' } },
  ];
}

const brief = (d: { effect: string; stage: string; rule: string | null }) => `${d.effect}/${d.stage}/${d.rule}`;

describe('toolgate mcp-proxy applies the policy file the way explain reads it (stdio and HTTP, real filesystem server)', () => {
  for (const route of ['stdio', 'http'] as const) {
    it(`${route}: tools: metadata by canonical name and the file's parameters schema; every call decided as explain decides it`, async () => {
      const { root, policy, audit } = sandbox();
      const set = await loadPolicyFile(policy);
      const who = route === 'stdio' ? { agent: 'fs-agent' } : { agent: 'fs-agent', scopes: ['files'] };
      const common = ['--policy', policy, '--agent', 'fs-agent', '--audit', audit];
      let client: Client;
      if (route === 'stdio') {
        client = (await stdioGateway([...common, '--', FS_SERVER, root], cleanups)).client;
      } else {
        const aud = ['--jwt-secret-file', `${root}.secret`, '--jwt-audience', 'gw'];
        writeFileSync(`${root}.secret`, SECRET);
        const { url } = await httpGateway([...common, ...aud, '--', FS_SERVER, root], cleanups);
        client = await httpClient(url, await hs256({ sub: 'carol', aud: 'gw', scope: 'files' }, SECRET), cleanups);
      }
      const expected: string[] = [];
      for (const call of calls(root)) {
        expected.push(brief((await explainCall(set, call, who)).decision));
        await client.callTool(call);
      }
      // The audit is written asynchronously (its write may still be landing as the answer arrives): read it
      // once its last line is whole.
      const read7 = () =>
        readFileSync(audit, 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as McpAuditRecord & { type: string })
          // The gateway's audit: one `tool` record per decision, besides its `mode` and `upstream` records.
          .filter((record) => record.type === 'tool');
      let records: ReturnType<typeof read7> = [];
      for (let tries = 0; tries < 50; tries++) {
        try {
          records = read7();
          if (records.length >= 7) break;
        } catch {
          // a line still being written
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(records.map((r) => brief(r.decision))).toEqual(expected);
      expect(expected).toEqual([
        'deny/policy/no-privileged',
        'allow/policy/listing',
        'deny/validation/null',
        'allow/policy/inbox',
        'deny/policy/null',
      ]);
      expect(existsSync(join(root, 'inbox', 'mail.md'))).toBe(false);
      expect(readFileSync(join(root, 'inbox', 'mail.txt'), 'utf8')).toBe('x');
      expect(existsSync(join(root, 'other.txt'))).toBe(false);
    });
  }
});

describe('toolgate mcp-proxy refuses unsafe HTTP configurations before it starts the upstream', () => {
  function marker() {
    const dir = tempDir('marker');
    const file = join(dir, 'spawned');
    const policy = join(dir, 'policy.json');
    writeFileSync(policy, JSON.stringify({ version: 1, fallback: 'allow' }));
    writeFileSync(join(dir, 'secret'), SECRET);
    const upstream = ['--', process.execPath, '-e', `require('fs').writeFileSync(${JSON.stringify(file)}, '')`];
    return { dir, file, policy, upstream };
  }

  it('--host 0.0.0.0: exit 2, and the upstream was never spawned', async () => {
    const { dir, file, policy, upstream } = marker();
    const args = ['--policy', policy, '--http', '0', '--host', '0.0.0.0', '--jwt-secret-file', join(dir, 'secret')];
    const result = await runGateway([...args, '--jwt-audience', 'gw', ...upstream]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--host must be a loopback address/);
    expect(existsSync(file)).toBe(false);
  });

  it('--http without --jwt-audience: exit 2 naming the option; --jwt-any-audience starts with a loud warning', async () => {
    const { dir, file, policy, upstream } = marker();
    const args = ['--policy', policy, '--jwt-secret-file', join(dir, 'secret')];
    const result = await runGateway([...args, '--http', '0', ...upstream]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--http needs --jwt-audience/);
    expect(existsSync(file)).toBe(false);

    const { root } = sandbox();
    const { url, stderr } = await httpGateway([...args, '--jwt-any-audience', '--', FS_SERVER, root], cleanups);
    expect(stderr()).toMatch(/WARNING: --jwt-any-audience: the audience of bearer tokens is NOT checked/);
    const client = await httpClient(url, await hs256({ sub: 'x', aud: 'anything' }, SECRET), cleanups);
    expect(Array.isArray((await client.listTools()).tools)).toBe(true);
  });

  it('--jwt-audience: a token minted for another service is a 401', async () => {
    const { root } = sandbox();
    const { dir, policy } = marker();
    const args = ['--policy', policy, '--jwt-secret-file', join(dir, 'secret'), '--jwt-audience', 'gw'];
    const { url } = await httpGateway([...args, '--', FS_SERVER, root], cleanups);
    const other = await hs256({ sub: 'x', aud: 'billing' }, SECRET);
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${other}`,
      },
      body: '{}',
    });
    expect(response.status).toBe(401);
    await httpClient(url, await hs256({ sub: 'x', aud: 'gw' }, SECRET), cleanups);
  });
});

describe('toolgate mcp-proxy: paths that name one file by many spellings, links, folders (real filesystem server)', () => {
  function tree() {
    const root = tempDir('paths');
    for (const dir of ['Keys', 'Gehälter', 'secret', 'inbox']) mkdirSync(join(root, dir));
    writeFileSync(join(root, 'Keys', 'id_rsa'), 'PRIVATE KEY');
    writeFileSync(join(root, 'Gehälter', '2026.csv'), 'salaries');
    writeFileSync(join(root, 'secret', 'key.txt'), 'secret key');
    writeFileSync(join(root, 'note.txt'), 'a note');
    symlinkSync(join(root, 'secret'), join(root, 'inbox', 'drop'));
    const policy = `${root}.policy.yaml`;
    const all = '[read_text_file, write_file, list_directory]';
    writeFileSync(
      policy,
      [
        'version: 1',
        `agents: { fs-agent: { tools: ${all} } }`,
        `scopes: { files: ${all} }`,
        'rules:',
        `  - { name: no-keys, tools: ${all}, result: deny, when: { path: { path: ["${root}/Keys", "${root}/Keys/**", "${root}/Gehälter/**"] } } }`,
        `  - { name: no-secret, tools: ${all}, result: deny, when: { path: { path: ["${root}/secret", "${root}/secret/**"], realpath: true } } }`,
        `  - { name: reads, tools: [read_text_file, list_directory], result: allow, when: { path: { path: "${root}/**" } } }`,
        `  - { name: inbox, tools: [write_file], result: allow, when: { path: { path: "${root}/inbox/**", realpath: true } } }`,
      ].join('\n'),
    );
    writeFileSync(`${root}.secret`, SECRET);
    return { root, policy, audit: `${root}.audit.jsonl` };
  }

  for (const route of ['stdio', 'http'] as const) {
    it(`${route}: Unicode-equivalent names, a link into a denied folder, and the inbox folder itself are refused`, async () => {
      const { root, policy, audit } = tree();
      const common = ['--policy', policy, '--agent', 'fs-agent', '--audit', audit];
      let client: Client;
      if (route === 'stdio') {
        client = (await stdioGateway([...common, '--', FS_SERVER, root], cleanups)).client;
      } else {
        const aud = ['--jwt-secret-file', `${root}.secret`, '--jwt-audience', 'gw'];
        const { url } = await httpGateway([...common, ...aud, '--', FS_SERVER, root], cleanups);
        client = await httpClient(url, await hs256({ sub: 'carol', aud: 'gw', scope: 'files' }, SECRET), cleanups);
      }
      const read = (path: string) => client.callTool({ name: 'read_text_file', arguments: { path } });
      const write = (path: string) => client.callTool({ name: 'write_file', arguments: { path, content: 'planted' } });
      expect(text(await read(join(root, 'note.txt')))).toBe('a note');
      // KELVIN SIGN and the NFD spelling: the filesystem server opens Keys/ and Gehälter/ for them.
      for (const path of [`${root}/\u212Aeys/id_rsa`, `${root}/Geha\u0308lter/2026.csv`]) {
        const refused = await read(path);
        expect(refused.isError).toBe(true);
        expect(text(refused)).toMatch(/refused \(rule "no-keys"\)/);
      }
      // inbox/drop → secret: the link is resolved before matching (realpath).
      expect(text(await read(join(root, 'inbox', 'drop', 'key.txt')))).toMatch(/refused \(rule "no-secret"\)/);
      expect(text(await write(join(root, 'inbox', 'drop', 'planted.txt')))).toMatch(/refused \(rule "no-secret"\)/);
      expect(existsSync(join(root, 'secret', 'planted.txt'))).toBe(false);
      // The inbox folder itself is not a file in inbox/**.
      const folder = await write(`${root}/inbox/`);
      expect(text(folder)).toMatch(/is the folder whose contents .* covers/);
      expect(text(await write(join(root, 'inbox', 'ok.txt')))).toMatch(/Successfully wrote/);
      // The audit is written asynchronously (its write may still be landing as the answer arrives): read it
      // once its last line is whole.
      const read7 = () =>
        readFileSync(audit, 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as McpAuditRecord & { type: string })
          // The gateway's audit: one `tool` record per decision, besides its `mode` and `upstream` records.
          .filter((record) => record.type === 'tool');
      let records: ReturnType<typeof read7> = [];
      for (let tries = 0; tries < 50; tries++) {
        try {
          records = read7();
          if (records.length >= 7) break;
        } catch {
          // a line still being written
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(records.map((r) => `${r.decision.effect}/${r.decision.by}/${r.decision.rule}/${r.status}`)).toEqual([
        'allow/rule/reads/ok',
        'deny/rule/no-keys/refused',
        'deny/rule/no-keys/refused',
        'deny/rule/no-secret/refused',
        'deny/rule/no-secret/refused',
        'deny/rule_error/inbox/refused',
        'allow/rule/inbox/ok',
      ]);
    });
  }
});
