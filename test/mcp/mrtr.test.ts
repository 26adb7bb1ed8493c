/**
 * Approvals in protocol form for 2026-07-28 clients: an ask answers `input_required` (a form elicitation)
 * with a `requestState` that is the approval model's binding of the call; the retry with the person's
 * answer runs the call once; a replayed, edited, moved (another principal, other arguments) or expired
 * state is refused and nothing runs. Over real HTTP, in front of a real 2026-07-28 upstream.
 */
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { createGateway, gatewayConfigOf, type GatewayAuditRecord } from '../../src/gateway/index.js';
import { serveGatewayHttp } from '../../src/gateway/http.js';
import { loadPolicyFile } from '../../src/policy-file/index.js';
import { MODERN, tsx } from './fixtures/processes.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function start() {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-mrtr-')));
  const ledger = join(dir, 'ledger');
  writeFileSync(ledger, '');
  const policy = join(dir, 'policy.yaml');
  const { stderr: _stderr, ...modern } = tsx(MODERN, { LEDGER: ledger });
  writeFileSync(
    policy,
    stringify({
      version: 1,
      gateway: { upstreams: { modern: { ...modern, connectTimeoutMs: 30_000 } } },
      rules: [
        { name: 'payments', tools: ['modern:pay'], result: 'ask', reason: 'a person approves payments' },
        { name: 'rest', result: 'allow' },
      ],
    }),
  );
  const set = await loadPolicyFile(policy);
  const records: GatewayAuditRecord[] = [];
  const gateway = await createGateway({
    policy: set,
    upstreams: gatewayConfigOf(set).upstreams,
    pins: null,
    audit: (r) => records.push(r),
  });
  cleanups.push(() => gateway.close());
  // Two principals: the token is the client id (a test authenticator; the JWT one is tested in test/gateway).
  const http = await serveGatewayHttp(gateway, {
    port: 0,
    audience: false,
    authenticate: async (token) => ({ token, clientId: token, scopes: ['modern:pay', 'modern:echo'] }),
  });
  cleanups.push(() => http.close());
  const paid = () => readFileSync(ledger, 'utf8').split('\n').filter(Boolean);
  return { url: http.url, paid, records };
}

const envelope = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
};

/** One 2026-07-28 `tools/call` as a client sends it (headers agreeing with the body). */
async function call(
  url: URL,
  token: string,
  args: Record<string, unknown>,
  retry?: { requestState: string; inputResponses?: Record<string, unknown> },
) {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'modern:pay',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: Math.floor(Math.random() * 1e9),
      method: 'tools/call',
      params: { name: 'modern:pay', arguments: args, _meta: envelope, ...(retry ?? {}) },
    }),
  });
  const text = await response.text();
  const json = text.startsWith('{') ? JSON.parse(text) : JSON.parse(/data: (.*)/.exec(text)![1]!);
  return json.result as {
    resultType: string;
    requestState?: string;
    inputRequests?: Record<string, { method: string; params: { mode: string; message: string } }>;
    isError?: boolean;
    content?: { text: string }[];
  };
}

const accept = { 'toolgate.approval': { action: 'accept', content: { approve: true } } };

describe('approvals as input_required for 2026-07-28 clients', { timeout: 120_000 }, () => {
  it('an SDK client answers the form and the retry runs the call once', async () => {
    const { url, paid, records } = await start();
    const client = new Client(
      { name: 'modern-client', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {} } } },
    );
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push((request.params as { message: string }).message);
      return { action: 'accept', content: { approve: true } };
    });
    await client.connect(
      new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: 'Bearer alice' } } }),
    );
    cleanups.push(() => client.close());
    const result = await client.callTool({ name: 'modern:pay', arguments: { to: 'bob', amount: 5 } });
    expect(result.isError).toBeFalsy();
    expect(asked).toEqual([
      expect.stringMatching(/Allow the tool call modern:pay\(\{"to":"bob","amount":5\}\)\? Rule "payments"/),
    ]);
    expect(paid()).toEqual(['bob:5']);
    const approvals = records.flatMap((r) => (r.type === 'tool' && r.approval ? [r.approval.state] : []));
    expect(approvals).toEqual(['asked', 'approved']);
  });

  it('refuses a replayed, edited, moved or expired requestState; nothing runs', async () => {
    const { url, paid } = await start();
    const first = await call(url, 'alice', { to: 'bob', amount: 5 });
    expect(first.resultType).toBe('input_required');
    expect(first.inputRequests?.['toolgate.approval']).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'form' },
    });
    const state = first.requestState!;
    // Never a grant by itself: the state without the person's answer does not run the call.
    expect((await call(url, 'alice', { to: 'bob', amount: 5 }, { requestState: state })).content?.[0]?.text).toMatch(
      /carries no answer/,
    );
    // Moved to another principal, or to other arguments.
    expect(
      (await call(url, 'mallory', { to: 'bob', amount: 5 }, { requestState: state, inputResponses: accept }))
        .content?.[0]?.text,
    ).toMatch(/another (run or session|caller)/);
    expect(
      (await call(url, 'alice', { to: 'eve', amount: 5000 }, { requestState: state, inputResponses: accept }))
        .content?.[0]?.text,
    ).toMatch(/other arguments/);
    // Edited: its binding changed, its id no longer matches.
    const decoded = JSON.parse(Buffer.from(state, 'base64url').toString('utf8'));
    decoded.binding.argsHash = '0'.repeat(64);
    const edited = Buffer.from(JSON.stringify(decoded)).toString('base64url');
    expect(
      (await call(url, 'alice', { to: 'bob', amount: 5 }, { requestState: edited, inputResponses: accept }))
        .content?.[0]?.text,
    ).toMatch(/not minted by this gateway or was changed/);
    expect(paid()).toEqual([]);
    // The right retry runs once; the same retry again is refused.
    const ran = await call(url, 'alice', { to: 'bob', amount: 5 }, { requestState: state, inputResponses: accept });
    expect(ran.isError).toBeFalsy();
    expect(paid()).toEqual(['bob:5']);
    const replay = await call(url, 'alice', { to: 'bob', amount: 5 }, { requestState: state, inputResponses: accept });
    expect(replay.content?.[0]?.text).toMatch(/used already/);
    expect(paid()).toEqual(['bob:5']);
    // Expired: a state answered after its 15 minutes.
    const late = (await call(url, 'alice', { to: 'carol', amount: 1 })).requestState!;
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 16 * 60_000 });
    const expired = await call(
      url,
      'alice',
      { to: 'carol', amount: 1 },
      { requestState: late, inputResponses: accept },
    );
    expect(expired.content?.[0]?.text).toMatch(/expired/);
    expect(paid()).toEqual(['bob:5']);
  });
});
