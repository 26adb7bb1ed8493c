/**
 * Approvals in protocol form for 2026-07-28 clients: an ask answers `input_required` (a form elicitation)
 * with a `requestState` that is the approval model's binding of the call, signed under the owner's secret;
 * the retry with the person's answer runs the call once; a replayed, edited, moved (another principal,
 * tenant, other arguments), expired or malformed state, answers for another request, and a gateway without
 * the owner's secret are each a protocol error (-32602) naming why, audited, and nothing runs. Over real
 * HTTP, in front of a real 2026-07-28 upstream. Two processes sharing a store: replicas.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GatewayAuditRecord } from '../../src/gateway/index.js';
import { MemoryLedger, MemoryNonceStore } from '../../src/stores/memory.js';
import {
  cleanupsAfterEach,
  emptyFile,
  gatewayOverHttp,
  lines,
  modernClient,
  modernRequest,
  stdioUpstream,
  tempDir,
  writePolicy,
} from '../harness.js';
import { MODERN } from './fixtures/processes.js';

const cleanups = cleanupsAfterEach();
// Registered after the cleanups, so it runs before them (after-hooks run last first).
afterEach(() => vi.useRealTimers());

const SECRET = 'the owner-set approval key of the replicas';

interface Started {
  readonly url: URL;
  readonly paid: () => string[];
  readonly records: GatewayAuditRecord[];
}

/**
 * A gateway in front of the 2026-07-28 fixture. `shared` makes it a replica of another (the same secret,
 * nonces, ledger and upstream ledger file); `requestState: false` gives it no owner-set secret.
 */
async function start(
  options: {
    tenant?: string;
    requestState?: false;
    shared?: { nonces: MemoryNonceStore; ledger: MemoryLedger; file: string };
  } = {},
): Promise<Started & { shared: { nonces: MemoryNonceStore; ledger: MemoryLedger; file: string } }> {
  const dir = tempDir('mrtr');
  const ledger = options.shared?.file ?? emptyFile(dir, 'ledger');
  const policy = writePolicy(dir, {
    gateway: { upstreams: { modern: { ...stdioUpstream(MODERN, { LEDGER: ledger }), connectTimeoutMs: 30_000 } } },
    ...(options.tenant ? { tenants: { acme: {}, globex: {} } } : {}),
    rules: [
      { name: 'payments', tools: ['modern:pay'], result: 'ask', reason: 'a person approves payments' },
      { name: 'rest', result: 'allow' },
    ],
  });
  const shared = options.shared ?? { nonces: new MemoryNonceStore(), ledger: new MemoryLedger(), file: ledger };
  const { url, records } = await gatewayOverHttp(cleanups, policy, {
    gateway: (set) => ({
      ...(options.tenant ? { context: set.context({ tenant: options.tenant }) } : {}),
      ...(options.requestState === false
        ? {}
        : { requestState: { secret: SECRET, nonces: shared.nonces, ledger: shared.ledger } }),
    }),
    // Two principals: the token is the client id (a test authenticator; the JWT one is tested in test/gateway).
    http: () => ({
      audience: false,
      authenticate: async (token) => ({ token, clientId: token, scopes: ['modern:pay', 'modern:echo'] }),
    }),
  });
  return { url, paid: () => lines(ledger), records, shared };
}

interface Answered {
  resultType?: string;
  requestState?: string;
  inputRequests?: Record<string, { method: string; params: { mode: string; message: string } }>;
  isError?: boolean;
  content?: { text: string }[];
  /** The protocol error, when the answer is one. */
  error?: { code: number; message: string };
}

/** One 2026-07-28 `tools/call` as a client sends it (headers agreeing with the body). */
async function call(
  url: URL,
  token: string,
  args: Record<string, unknown>,
  retry?: { requestState?: unknown; inputResponses?: Record<string, unknown> },
): Promise<Answered> {
  const { body: json } = await modernRequest<{ result: Answered; error?: Answered['error'] }>(
    url,
    'tools/call',
    { name: 'modern:pay', arguments: args, ...(retry ?? {}) },
    { token, capabilities: { elicitation: { form: {} } }, id: Math.floor(Math.random() * 1e9) },
  );
  return json.error ? { error: json.error } : json.result;
}

/** The protocol error's message of a refused retry (-32602), else a failure. */
function refusal(answer: Answered): string {
  expect(answer.error, JSON.stringify(answer)).toBeDefined();
  expect(answer.error!.code).toBe(-32602);
  return answer.error!.message;
}

/** The reasons the audit gives for refused approvals. */
const deniedReasons = (records: GatewayAuditRecord[]) =>
  records.flatMap((r) => (r.type === 'tool' && r.approval?.state === 'denied' ? [r.approval.reason ?? ''] : []));

const accept = { 'toolgate.approval': { action: 'accept', content: { approve: true } } };

describe('approvals as input_required for 2026-07-28 clients', { timeout: 120_000 }, () => {
  it('an SDK client answers the form and the retry runs the call once', async () => {
    const { url, paid, records } = await start();
    const asked: string[] = [];
    const client = await modernClient(cleanups, url, {
      token: 'alice',
      capabilities: { elicitation: { form: {} } },
      setup: (c) =>
        c.setRequestHandler('elicitation/create', async (request) => {
          asked.push((request.params as { message: string }).message);
          return { action: 'accept', content: { approve: true } };
        }),
    });
    const result = await client.callTool({ name: 'modern:pay', arguments: { to: 'bob', amount: 5 } });
    expect(result.isError).toBeFalsy();
    expect(asked).toEqual([
      expect.stringMatching(/Allow the tool call modern:pay\(\{"to":"bob","amount":5\}\)\? Rule "payments"/),
    ]);
    expect(paid()).toEqual(['bob:5']);
    const approvals = records.flatMap((r) => (r.type === 'tool' && r.approval ? [r.approval.state] : []));
    expect(approvals).toEqual(['asked', 'approved']);
  });

  it('refuses a replayed, edited, moved or expired requestState with a protocol error; nothing runs', async () => {
    const { url, paid, records } = await start();
    const first = await call(url, 'alice', { to: 'bob', amount: 5 });
    expect(first.resultType).toBe('input_required');
    expect(first.inputRequests?.['toolgate.approval']).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'form' },
    });
    const state = first.requestState!;
    // Never a grant by itself: the state without the person's answer does not run the call.
    expect(refusal(await call(url, 'alice', { to: 'bob', amount: 5 }, { requestState: state }))).toMatch(
      /carries no answer/,
    );
    // Answers for another request.
    expect(
      refusal(
        await call(url, 'alice', { to: 'bob', amount: 5 }, { requestState: state, inputResponses: { other: {} } }),
      ),
    ).toMatch(/answer another request/);
    // Moved to another principal, or to other arguments.
    expect(
      refusal(await call(url, 'mallory', { to: 'bob', amount: 5 }, { requestState: state, inputResponses: accept })),
    ).toMatch(/another (run or session|caller)/);
    expect(
      refusal(await call(url, 'alice', { to: 'eve', amount: 5000 }, { requestState: state, inputResponses: accept })),
    ).toMatch(/other arguments/);
    // Edited: its binding changed, its id no longer matches.
    const decoded = JSON.parse(Buffer.from(state, 'base64url').toString('utf8'));
    decoded.binding.argsHash = '0'.repeat(64);
    const edited = Buffer.from(JSON.stringify(decoded)).toString('base64url');
    expect(
      refusal(await call(url, 'alice', { to: 'bob', amount: 5 }, { requestState: edited, inputResponses: accept })),
    ).toMatch(/not minted by this gateway or was changed/);
    // Malformed: not base64url JSON, or not a string at all.
    expect(
      refusal(await call(url, 'alice', { to: 'bob', amount: 5 }, { requestState: '%%%', inputResponses: accept })),
    ).toMatch(/malformed/);
    // Answers without the state they answer.
    expect(refusal(await call(url, 'alice', { to: 'bob', amount: 5 }, { inputResponses: accept }))).toMatch(
      /without the requestState/,
    );
    expect(paid()).toEqual([]);
    // The right retry runs once; the same retry again is refused.
    const ran = await call(url, 'alice', { to: 'bob', amount: 5 }, { requestState: state, inputResponses: accept });
    expect(ran.isError, JSON.stringify(ran)).toBeFalsy();
    expect(paid()).toEqual(['bob:5']);
    const replay = await call(url, 'alice', { to: 'bob', amount: 5 }, { requestState: state, inputResponses: accept });
    expect(refusal(replay)).toMatch(/used already/);
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
    expect(refusal(expired)).toMatch(/expired/);
    vi.useRealTimers();
    expect(paid()).toEqual(['bob:5']);
    // Audited: each refusal is an approval denied with its reason.
    const reasons = deniedReasons(records);
    for (const why of [
      /carries no answer/,
      /another request/,
      /other arguments/,
      /changed/,
      /malformed/,
      /used already/,
      /expired/,
    ])
      expect(
        reasons.some((r) => why.test(r)),
        `${why} in ${JSON.stringify(reasons)}`,
      ).toBe(true);
  });

  it('replicas sharing the secret and stores: one verifies the other’s state, a retry runs once across them, another tenant is refused', async () => {
    const a = await start({ tenant: 'acme' });
    const b = await start({ tenant: 'acme', shared: a.shared });
    const other = await start({ tenant: 'globex', shared: a.shared });
    const state = (await call(a.url, 'alice', { to: 'bob', amount: 7 })).requestState!;
    expect(state).toBeDefined();
    // Transferred to another tenant (same principal, same secret): refused.
    expect(
      refusal(
        await call(other.url, 'alice', { to: 'bob', amount: 7 }, { requestState: state, inputResponses: accept }),
      ),
    ).toMatch(/another tenant/);
    // The same retry at both replicas at once: exactly one runs it.
    const both = await Promise.all([
      call(a.url, 'alice', { to: 'bob', amount: 7 }, { requestState: state, inputResponses: accept }),
      call(b.url, 'alice', { to: 'bob', amount: 7 }, { requestState: state, inputResponses: accept }),
    ]);
    expect(both.filter((r) => r.error === undefined && !r.isError)).toHaveLength(1);
    expect(refusal(both.find((r) => r.error !== undefined)!)).toMatch(/used already|being used/);
    expect(a.paid()).toEqual(['bob:7']);
    // The ledger holds what the call answered.
    const decoded = JSON.parse(Buffer.from(state, 'base64url').toString('utf8'));
    const row = await a.shared.ledger.inspect(`toolgate.mrtr:${decoded.binding.nonce}`);
    expect(row?.outcome?.content).toMatch(/paid 7 to bob/);
  });

  it('without the owner-set secret no state is minted: the ask is a protocol error naming the option', async () => {
    const { url, paid, records } = await start({ requestState: false });
    expect(refusal(await call(url, 'alice', { to: 'bob', amount: 5 }))).toMatch(
      /no approval secret set by its owner.*TOOLGATE_APPROVAL_SECRET/,
    );
    expect(paid()).toEqual([]);
    expect(deniedReasons(records)).toEqual([expect.stringMatching(/no approval secret/)]);
  });
});
