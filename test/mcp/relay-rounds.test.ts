/**
 * An upstream's own input requests relayed to a 2026-07-28 client (multi round-trip requests): the
 * upstream (a real SDK v2 server over Streamable HTTP, test/gateway/fixtures/mrtr-server.ts) answers
 * `input_required`; the upstream is told the request's own declared capabilities, and the client is given
 * the inputRequests with a requestState of the gateway's own: the upstream's state wrapped, signed under
 * the owner's secret, bound to the principal, tenant, request and arguments, once. The retry is decided by
 * the gate again and the upstream gets its own state back with the answers; a tampered, transferred,
 * replayed or misdirected wrapper is a -32602 naming why, audited, and never reaches the upstream.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashOf } from '../../src/crypto.js';
import type { GatewayAuditRecord } from '../../src/gateway/index.js';
import { MemoryLedger, MemoryNonceStore } from '../../src/stores/memory.js';
import {
  cleanupsAfterEach,
  emptyFile,
  gatewayOverHttp,
  jsonLines,
  modernClient,
  modernRequest,
  ROOT,
  tempDir,
  writePolicy,
} from '../harness.js';
import { httpFixture } from './fixtures/processes.js';

const MRTR = join(ROOT, 'test/gateway/fixtures/mrtr-server.ts');

const cleanups = cleanupsAfterEach();

/** What reached the upstream: one line per request it was sent (method, name, the state it carried). */
type Seen = { method: string; name: string; requestState: string | null }[];

async function start(): Promise<{ url: URL; seen: () => Seen; records: GatewayAuditRecord[] }> {
  const dir = tempDir('relay-rounds');
  const seenFile = emptyFile(dir, 'seen');
  const upstream = await httpFixture(MRTR, { SEEN: seenFile });
  cleanups.push(() => upstream.stop());
  const policy = writePolicy(dir, {
    gateway: { upstreams: { mrtr: { url: upstream.url.href, prefix: false } }, pin: 'off' },
    rules: [{ name: 'everything', result: 'allow' }],
    prompts: [{ name: 'everything', result: 'allow' }],
  });
  const { url, records } = await gatewayOverHttp(cleanups, policy, {
    gateway: () => ({
      requestState: {
        secret: 'the owner-set approval key of the gateway',
        nonces: new MemoryNonceStore(),
        ledger: new MemoryLedger(),
      },
    }),
    // Principals by token (a test authenticator; the JWT one is tested in test/gateway).
    http: () => ({ audience: false, authenticate: async (token) => ({ token, clientId: token, scopes: TOOLS }) }),
  });
  return { url, seen: () => jsonLines<Seen[number]>(seenFile), records };
}

/** The fixture's tools: every principal's scopes (the caller layer allows what they name). */
const TOOLS = [
  'test_input_required_result_elicitation',
  'test_input_required_result_sampling',
  'test_input_required_result_multi_round',
  'test_input_required_result_request_state',
  'test_input_required_result_tampered_state',
  'test_input_required_result_capabilities',
];

const ALL = { elicitation: { form: {} }, sampling: {}, roots: {} };

interface Answered {
  resultType?: string;
  requestState?: string;
  inputRequests?: Record<string, { method: string }>;
  content?: { text: string }[];
  error?: { code: number; message: string; data?: Record<string, unknown> };
}

/** One 2026-07-28 request as a client sends it (headers agreeing with the body). */
async function send(
  url: URL,
  token: string,
  method: 'tools/call' | 'prompts/get',
  name: string,
  extra: Record<string, unknown> = {},
  capabilities: Record<string, unknown> = ALL,
): Promise<Answered> {
  const { body: json } = await modernRequest<{ result: Answered; error?: Answered['error'] }>(
    url,
    method,
    { name, arguments: {}, ...extra },
    { token, capabilities, id: Math.floor(Math.random() * 1e9) },
  );
  return json.error ? { error: json.error } : json.result;
}

function refusal(answer: Answered): string {
  expect(answer.error, JSON.stringify(answer)).toBeDefined();
  expect(answer.error!.code).toBe(-32602);
  return answer.error!.message;
}

const STATEFUL = 'test_input_required_result_request_state';
const confirm = { confirm: { action: 'accept', content: { ok: true } } };

describe("an upstream's input_required relayed to a 2026-07-28 client", { timeout: 120_000 }, () => {
  it('an SDK client answers the upstream through the gateway: elicitation, and three rounds with state', async () => {
    const { url, seen } = await start();
    const client = await modernClient(cleanups, url, {
      token: 'alice',
      capabilities: { elicitation: { form: {} } },
      setup: (c) =>
        c.setRequestHandler('elicitation/create', async (request) => {
          const message = (request.params as { message: string }).message;
          return { action: 'accept', content: /color/.test(message) ? { color: 'green' } : { name: 'Alice' } };
        }),
    });
    const hello = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
    expect(hello.content).toEqual([{ type: 'text', text: 'Hello, Alice!' }]);
    const rounds = await client.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
    expect(rounds.content).toEqual([{ type: 'text', text: 'Alice likes green' }]);
    // The upstream got its own states back (its format: body.mac), never the gateway's wrapper.
    const states = seen()
      .filter((s) => s.name === 'test_input_required_result_multi_round')
      .map((s) => s.requestState);
    expect(states).toHaveLength(3);
    expect(states[0]).toBeNull();
    for (const state of states.slice(1)) expect(state).toMatch(/^[\w-]+\.[\w-]+$/);
  });

  it('the client gets a wrapper, not the upstream state; the retry runs once; a replay is refused upstream-unseen', async () => {
    const { url, seen, records } = await start();
    const first = await send(url, 'alice', 'tools/call', STATEFUL);
    expect(first.resultType).toBe('input_required');
    expect(Object.keys(first.inputRequests!)).toEqual(['confirm']);
    const upstreamState = seen()[0]!;
    expect(upstreamState.requestState).toBeNull();
    // The wrapper is the gateway's: the upstream's own signed state is inside, bound to alice.
    const wrapper = JSON.parse(Buffer.from(first.requestState!, 'base64url').toString('utf8'));
    expect(wrapper).toMatchObject({ v: 1, kind: 'upstream', body: { caller: 'alice', upstream: 'mrtr' } });
    const done = await send(url, 'alice', 'tools/call', STATEFUL, {
      requestState: first.requestState,
      inputResponses: confirm,
    });
    expect(done.content?.[0]?.text).toMatch(/^state-ok/);
    expect(seen()[1]!.requestState).toBe(wrapper.body.state);
    const replay = await send(url, 'alice', 'tools/call', STATEFUL, {
      requestState: first.requestState,
      inputResponses: confirm,
    });
    expect(refusal(replay)).toMatch(/used already/);
    expect(seen()).toHaveLength(2);
    expect(records.some((r) => r.type === 'protocol' && /used already/.test(r.reason))).toBe(true);
  });

  it('a tampered, transferred, misdirected or malformed wrapper is refused and never reaches the upstream', async () => {
    const { url, seen } = await start();
    const first = await send(url, 'alice', 'tools/call', STATEFUL);
    const state = first.requestState!;
    const retry = (token: string, requestState: unknown, name = STATEFUL) =>
      send(url, token, 'tools/call', name, { requestState, inputResponses: confirm });
    // Edited: the upstream's state swapped inside, the MAC left as it was.
    const edited = JSON.parse(Buffer.from(state, 'base64url').toString('utf8'));
    edited.body.state = 'forged';
    expect(refusal(await retry('alice', Buffer.from(JSON.stringify(edited)).toString('base64url')))).toMatch(
      /not issued by this gateway or was changed/,
    );
    // Transferred to another principal.
    expect(refusal(await retry('mallory', state))).toMatch(/another principal/);
    // For another request (another tool of the same upstream).
    expect(refusal(await retry('alice', state, 'test_input_required_result_tampered_state'))).toMatch(
      /another request/,
    );
    // Malformed (the suite's tampering: a suffix).
    expect(refusal(await retry('alice', `${state}-TAMPERED`))).toMatch(/malformed/);
    expect(seen()).toHaveLength(1);
    // None of them used it up: alice's own retry still runs.
    expect((await retry('alice', state)).content?.[0]?.text).toMatch(/^state-ok/);
    expect(seen()).toHaveLength(2);
  });

  it('the wrapper binds the arguments as the client sent them: a retry with others is refused upstream-unseen', async () => {
    const { url, seen } = await start();
    // The binding is digested only when the upstream's round is wrapped (after the call ran): still of
    // the arguments as they came, whatever arguments they are.
    for (const args of [{}, { zeta: [1, { b: 'x', a: null }], alpha: 'é' }]) {
      const first = await send(url, 'alice', 'tools/call', STATEFUL, { arguments: args });
      const wrapper = JSON.parse(Buffer.from(first.requestState!, 'base64url').toString('utf8'));
      expect(wrapper.body.argsHash).toBe(hashOf(args));
      const other = await send(url, 'alice', 'tools/call', STATEFUL, {
        arguments: { ...args, more: 1 },
        requestState: first.requestState,
        inputResponses: confirm,
      });
      expect(refusal(other)).toMatch(/other arguments/);
    }
    expect(seen()).toHaveLength(2);
  });

  it('the upstream is told only what the client declared; prompts relay too', async () => {
    const { url } = await start();
    // The request's own clientCapabilities go upstream (the gateway's declaration gives way): asked only for sampling.
    const capabilities = await send(
      url,
      'alice',
      'tools/call',
      'test_input_required_result_capabilities',
      {},
      {
        sampling: {},
      },
    );
    expect(capabilities.resultType).toBe('input_required');
    expect(Object.values(capabilities.inputRequests!).map((r) => r.method)).toEqual(['sampling/createMessage']);
    const prompt = await send(url, 'alice', 'prompts/get', 'test_input_required_result_prompt', {
      arguments: undefined,
    });
    expect(prompt.resultType).toBe('input_required');
    const got = await send(url, 'alice', 'prompts/get', 'test_input_required_result_prompt', {
      requestState: prompt.requestState,
      inputResponses: { user_context: { action: 'accept', content: { context: 'tests' } } },
    });
    expect(JSON.stringify(got)).toContain('Context: tests');
  });
});
