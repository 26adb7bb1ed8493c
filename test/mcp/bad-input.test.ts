/**
 * Bad input from 2026-07-28 clients, each answered with an error naming what was wrong, nothing run, and
 * audited: `server/discover` without a token, or with one that does not verify (401 with the challenge,
 * an `access` record), and a `tools/call` from an era the gateway does not speak (-32022, a `protocol`
 * record) on the same authenticated listener; an upstream's elicitation for a 2026-07-28 client that did
 * not declare it fails the call with -32021 (declared: -32603, the gateway does not relay it yet), audited.
 * The other bad inputs of issue 23 are tested where they live:
 * a malformed, replayed, edited, moved or expired requestState and answers for another request in
 * mrtr.test.ts; an upstream answering in an era it did not announce in upstreams.test.ts and client.test.ts;
 * headers that disagree with the body in downstream.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  cleanupsAfterEach,
  emptyFile,
  gatewayOverHttp,
  lines,
  modernMeta,
  modernRequest,
  postMcp,
  stdioUpstream,
  tempDir,
  writePolicy,
} from '../harness.js';
import { LEGACY, MODERN } from './fixtures/processes.js';

const cleanups = cleanupsAfterEach();

describe('bad input from 2026-07-28 clients', { timeout: 120_000 }, () => {
  it('discover without a valid token is 401 and audited; an unknown era is -32022 and audited; nothing runs', async () => {
    const dir = tempDir('bad-input');
    const ledger = emptyFile(dir, 'ledger');
    const modern = { ...stdioUpstream(MODERN, { LEDGER: ledger }), connectTimeoutMs: 30_000 };
    const policy = writePolicy(dir, {
      gateway: { upstreams: { modern }, pin: 'off' },
      rules: [{ name: 'rest', result: 'allow' }],
    });
    const { http, records } = await gatewayOverHttp(cleanups, policy, {
      http: (_set, records) => ({
        audience: false,
        audit: (r) => records.push(r),
        authenticate: async (token) => {
          if (token !== 'good') throw new Error('bad token');
          return { token, clientId: 'alice', scopes: ['modern:pay'] };
        },
      }),
    });
    const post = (method: string, params: Record<string, unknown>, headers: Record<string, string>) =>
      postMcp(http.url, { id: 3, method, params }, { 'mcp-method': method, ...headers });
    const modernHeaders = { 'mcp-protocol-version': '2026-07-28' };
    const discover = { _meta: modernMeta() };

    const anonymous = await post('server/discover', discover, modernHeaders);
    expect(anonymous.status).toBe(401);
    expect(anonymous.challenge).toMatch(/^Bearer resource_metadata="/);
    expect(anonymous.body).toMatchObject({ error: 'invalid_request', error_description: 'a bearer token is required' });
    const forged = await post('server/discover', discover, { ...modernHeaders, authorization: 'Bearer forged' });
    expect(forged.status).toBe(401);
    expect(forged.challenge).toMatch(/error="invalid_token"/);
    const access = records.filter((r) => r.type === 'access').map((r) => (r as { reason: string }).reason);
    expect(access).toEqual([
      expect.stringMatching(/^401 invalid_request: a bearer token is required/),
      expect.stringMatching(/^401 invalid_token: the bearer token could not be verified/),
    ]);

    // An era the gateway does not speak, authenticated: -32022 naming the one it does; nothing runs.
    const pay = { name: 'modern:pay', arguments: { to: 'bob', amount: 1 }, _meta: modernMeta({}, '2030-01-01') };
    const unknown = await post('tools/call', pay, {
      'mcp-protocol-version': '2030-01-01',
      'mcp-name': 'modern:pay',
      authorization: 'Bearer good',
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ error: { code: -32022 } });
    expect(JSON.stringify(unknown.body)).toContain('2026-07-28');
    expect(records.filter((r) => r.type === 'protocol').map((r) => (r as { reason: string }).reason)).toEqual([
      expect.stringMatching(/Unsupported protocol version: 2030-01-01/),
    ]);
    expect(records.filter((r) => r.type === 'tool')).toEqual([]);
    expect(lines(ledger)).toEqual([]);

    // The same discover with the token: served, private.
    const served = await post('server/discover', discover, { ...modernHeaders, authorization: 'Bearer good' });
    expect(served.status).toBe(200);
    expect(served.body).toMatchObject({ result: { cacheScope: 'private' } });
  });

  it("an upstream's elicitation the 2026-07-28 client did not declare fails the call with -32021; audited", async () => {
    const policy = writePolicy(tempDir('bad-input'), {
      gateway: { upstreams: { legacy: { ...stdioUpstream(LEGACY), connectTimeoutMs: 30_000 } }, pin: 'off' },
      rules: [{ name: 'rest', result: 'allow' }],
    });
    const { http, records } = await gatewayOverHttp(cleanups, policy);
    const confirm = async (capabilities: Record<string, unknown>) =>
      (
        await modernRequest<{ result?: unknown; error?: { code: number; message: string; data?: unknown } }>(
          http.url,
          'tools/call',
          { name: 'legacy:confirm', arguments: {} },
          { capabilities, id: 5 },
        )
      ).body;
    const undeclared = await confirm({});
    expect(undeclared.error?.code, JSON.stringify(undeclared)).toBe(-32021);
    // What is missing, as the schema names it: a ClientCapabilities object.
    expect(undeclared.error?.data).toEqual({ requiredCapabilities: { elicitation: {} } });
    expect(undeclared.error?.message).toMatch(
      /asked the client for elicitation, which this request's clientCapabilities do not declare/,
    );
    const declared = await confirm({ elicitation: { form: {} } });
    expect(declared.error?.code, JSON.stringify(declared)).toBe(-32603);
    expect(declared.error?.message).toMatch(/does not relay to a 2026-07-28 client yet/);
    expect(records.filter((r) => r.type === 'protocol').map((r) => (r as { reason: string }).reason)).toEqual([
      expect.stringMatching(/do not declare/),
      expect.stringMatching(/does not relay/),
    ]);
  });
});
