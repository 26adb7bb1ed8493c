/**
 * Step-up instead of a flat refusal: a 2026-07-28 tool call the caller layer refused, where the policy's
 * scope map names a scope that covers the tool, is answered HTTP 403 with `WWW-Authenticate: Bearer
 * error="insufficient_scope", scope="…"` (the narrowest such scope) and the audit record says so; nothing
 * runs. A refusal that is not scope-shaped (a deny rule; a tool no scope covers) stays a 200 refusal, and
 * a 2025-11-25 client keeps the refusal in its session.
 */
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import {
  cleanupsAfterEach,
  emptyFile,
  gatewayOverHttp,
  lines,
  modernRequest,
  stdioUpstream,
  tempDir,
  writePolicy,
} from '../harness.js';
import { MODERN } from './fixtures/processes.js';

const cleanups = cleanupsAfterEach();

async function start() {
  const dir = tempDir('stepup');
  const ledger = emptyFile(dir, 'ledger');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: { modern: { ...stdioUpstream(MODERN, { LEDGER: ledger }), connectTimeoutMs: 30_000 } },
      pin: 'off',
    },
    // `finance` covers pay and more; `payments` is the narrowest scope that covers it.
    scopes: {
      reading: ['modern:echo'],
      finance: ['modern:pay', 'modern:echo', 'modern:era'],
      payments: ['modern:pay'],
    },
    rules: [
      { name: 'no-failing', tools: ['modern:fail'], result: 'deny', reason: 'failing is not allowed' },
      { name: 'rest', result: 'allow' },
    ],
  });
  // The token is "<subject>:<scope>,<scope>…"; its scopes reach the caller layer through the scope map.
  const { url, records } = await gatewayOverHttp(cleanups, policy, {
    http: (set) => ({
      audience: false,
      authenticate: async (token) => {
        const [sub, scopes = ''] = token.split(':');
        return { token, clientId: sub!, scopes: scopes.split(',').filter(Boolean) };
      },
      context: (auth) => ({ caller: { id: auth.clientId, scopes: set.toolsForScopes(auth.scopes) } }),
    }),
  });
  return { url, records, paid: () => lines(ledger) };
}

const call = (url: URL, token: string, name: string, args: Record<string, unknown>) =>
  modernRequest<{ result?: CallToolResult; error?: unknown }>(url, 'tools/call', { name, arguments: args }, { token });

describe('step-up for scope-shaped refusals', { timeout: 120_000 }, () => {
  it('a 2026-07-28 call the caller layer refused is 403 insufficient_scope naming the narrowest scope; audited', async () => {
    const { url, records, paid } = await start();
    const refused = await call(url, 'alice:reading', 'modern:pay', { to: 'bob', amount: 5 });
    expect(refused.status).toBe(403);
    expect(refused.challenge).toMatch(/^Bearer error="insufficient_scope", scope="payments"/);
    // Where to ask for more: the Protected Resource Metadata the 401 challenge names too.
    const metadata = `${url.origin}/.well-known/oauth-protected-resource${url.pathname}`;
    expect(refused.challenge).toContain(`resource_metadata="${metadata}"`);
    const served = await fetch(metadata);
    expect(served.status).toBe(200);
    expect(refused.body.result?.isError).toBe(true);
    expect(paid()).toEqual([]);
    const record = records.find((r) => r.type === 'tool' && r.decision?.canonical === 'modern:pay');
    expect(record).toMatchObject({ stepUp: { status: 403, scope: 'payments' }, decision: { layer: 'caller' } });

    // With the scope asked for, the same call runs.
    const stepped = await call(url, 'alice:reading,payments', 'modern:pay', { to: 'bob', amount: 5 });
    expect(stepped.status).toBe(200);
    expect(stepped.body.result?.isError).toBeFalsy();
    expect(paid()).toEqual(['bob:5']);
  });

  it('a refusal that is not scope-shaped stays a refusal: a deny rule, a tool no scope covers, a 2025 client', async () => {
    const { url, records } = await start();
    // A deny rule (the caller's scopes do not even reach it: no scope covers fail).
    const noScope = await call(url, 'alice:finance', 'modern:fail', {});
    expect(noScope.status).toBe(200);
    expect(noScope.challenge).toBeNull();
    expect(noScope.body.result?.isError).toBe(true);
    // A 2025-11-25 client over its session: the refusal in the body, no 403.
    const legacy = new ClientV1({ name: 'legacy', version: '1' });
    await legacy.connect(new HttpV1(url, { requestInit: { headers: { authorization: 'Bearer bob:reading' } } }));
    cleanups.push(() => legacy.close());
    const result = (await legacy.callTool({ name: 'modern:pay', arguments: { to: 'x', amount: 1 } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toMatch(/layer: caller/);
    expect(records.filter((r) => r.type === 'tool' && 'stepUp' in r && r.stepUp)).toHaveLength(0);
  });
});
