// A 2026-07-28 requestState minted for one route's agent, replayed with the person's answer on another
// route (/mcp/<agent>) of the same gateway by the same caller: refused, nothing runs; the route it was
// minted on runs the call once. The route with no agent (/mcp) and the agent declared as `agent` are two.
import { describe, expect, it } from 'vitest';
import { MemoryLedger, MemoryNonceStore } from '../../src/stores/memory.js';
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
import { MODERN } from '../mcp/fixtures/processes.js';

const cleanups = cleanupsAfterEach();
const SECRET = 'the owner-set approval key of the replicas';

interface Answered {
  resultType?: string;
  requestState?: string;
  isError?: boolean;
  content?: { text: string }[];
  error?: { code: number; message: string };
}

async function start() {
  const dir = tempDir('atk-agent-mrtr');
  const ledger = emptyFile(dir, 'ledger');
  const policy = writePolicy(dir, {
    gateway: { upstreams: { modern: { ...stdioUpstream(MODERN, { LEDGER: ledger }), connectTimeoutMs: 30_000 } } },
    agents: { ops: { tools: ['modern:pay'] }, helper: { tools: ['modern:pay'] }, agent: { tools: ['modern:pay'] } },
    rules: [
      { name: 'payments', tools: ['modern:pay'], result: 'ask', reason: 'a person approves payments' },
      { name: 'rest', result: 'allow' },
    ],
  });
  const { url } = await gatewayOverHttp(cleanups, policy, {
    gateway: () => ({
      requestState: { secret: SECRET, nonces: new MemoryNonceStore(), ledger: new MemoryLedger() },
    }),
    http: (set) => ({
      audience: false,
      routeAgents: true,
      authenticate: async (token) => ({ token, clientId: token, scopes: [] }),
      context: (auth, route) => ({
        ...set.context(route.agent !== undefined ? { agent: route.agent } : {}),
        caller: { id: auth.clientId },
      }),
    }),
  });
  return { url, paid: () => lines(ledger) };
}

async function call(
  url: URL,
  args: Record<string, unknown>,
  retry?: { requestState?: unknown; inputResponses?: Record<string, unknown> },
): Promise<Answered> {
  const { body } = await modernRequest<{ result: Answered; error?: Answered['error'] }>(
    url,
    'tools/call',
    { name: 'modern:pay', arguments: args, ...(retry ?? {}) },
    { token: 'alice', capabilities: { elicitation: { form: {} } }, id: Math.floor(Math.random() * 1e9) },
  );
  return body.error ? { error: body.error } : body.result;
}

const accept = { 'toolgate.approval': { action: 'accept', content: { approve: true } } };

describe('2026-07-28 rounds: a requestState answers its own route’s agent only', { timeout: 120_000 }, () => {
  it('minted on /mcp/ops, replayed on /mcp/helper: refused; on /mcp/ops it runs once', async () => {
    const { url, paid } = await start();
    const at = (agent: string) => new URL(`${url.href}/${agent}`);
    const args = { to: 'bob', amount: 5 };
    const first = await call(at('ops'), args);
    expect(first.resultType, JSON.stringify(first)).toBe('input_required');
    const moved = await call(at('helper'), args, { requestState: first.requestState, inputResponses: accept });
    expect(moved.error?.code, JSON.stringify(moved)).toBe(-32602);
    expect(moved.error!.message).toMatch(/given for agent "ops" and agent "helper" asks now/);
    expect(paid()).toEqual([]);
    const own = await call(at('ops'), args, { requestState: first.requestState, inputResponses: accept });
    expect(own.isError, JSON.stringify(own)).toBeFalsy();
    expect(paid()).toEqual(['bob:5']);
  });

  it('minted on /mcp (no agent), replayed on /mcp/agent: refused; on /mcp it runs once', async () => {
    const { url, paid } = await start();
    const args = { to: 'carol', amount: 7 };
    const first = await call(url, args);
    expect(first.resultType, JSON.stringify(first)).toBe('input_required');
    const moved = await call(new URL(`${url.href}/agent`), args, {
      requestState: first.requestState,
      inputResponses: accept,
    });
    expect(moved.error?.code, JSON.stringify(moved)).toBe(-32602);
    expect(paid()).toEqual([]);
    const own = await call(url, args, { requestState: first.requestState, inputResponses: accept });
    expect(own.isError, JSON.stringify(own)).toBeFalsy();
    expect(paid()).toEqual(['carol:7']);
  });
});
