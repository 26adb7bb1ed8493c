// Attacks on the 2026-07-28 route since its handlers are bound once per route (src/gateway/modern-binding.ts:
// one ModernBinding, a ModernRequest per request, the round of asks made lazily at the ask), over real HTTP
// with the fast path on and off: concurrent asks of two subjects interleaved (each requestState bound to its
// own caller, call and arguments), retries moved to another caller, other arguments, duplicated at once and
// replayed, a retry after a policy reload, and lists interleaved with another caller's calls. Each test FAILS
// when the attack gets through.
import { readFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { GatewayAuditRecord } from '../../src/gateway/index.js';
import { MemoryLedger, MemoryNonceStore } from '../../src/stores/memory.js';
import { cleanupsAfterEach, fastPathFor, gatewayOverHttp, modernMeta, modernRequest, postMcp } from '../harness.js';
import { modernUpstreamPolicy } from './fixtures/modern-fast.js';

const cleanups = cleanupsAfterEach();
const SECRET = 'atk-modern-rounds-secret-0123456789abcdef';

/** alice may echo; mallory and bob may echo, pay and confirm. */
const TOKENS: Record<string, string[]> = {
  alice: ['mod:echo'],
  mallory: ['mod:echo', 'mod:pay', 'mod:confirm'],
  bob: ['mod:echo', 'mod:pay', 'mod:confirm'],
};

async function gateway(fast: boolean, extra: Record<string, unknown> = {}) {
  const { policy, ledger } = await modernUpstreamPolicy(
    cleanups,
    'atk-modern-rounds',
    { name: 'many', tool: 'mod:fail', max: 1000 },
    extra,
  );
  const records: GatewayAuditRecord[] = [];
  fastPathFor(cleanups, fast);
  const on = await gatewayOverHttp(cleanups, policy, {
    gateway: () => ({
      requestState: { secret: SECRET, nonces: new MemoryNonceStore(), ledger: new MemoryLedger() },
      audit: (record: GatewayAuditRecord) => void records.push(record),
    }),
    http: () => ({
      audience: false,
      authenticate: async (token: string) => {
        const scopes = TOKENS[token];
        if (!scopes) throw new Error('unknown token');
        return { token, clientId: token, scopes };
      },
    }),
  });
  // The modern handler (and whether it has a fast path) is made on the first 2026-07-28 request.
  await pay(on.url, 'mallory', { to: 'warm', amount: 1 });
  writeFileSync(ledger, '');
  records.length = 0;
  return { ...on, policy, records, paid: () => readFileSync(ledger, 'utf8').split('\n').filter(Boolean) };
}

interface Answer {
  readonly status: number;
  readonly result?:
    | undefined
    | {
        resultType?: string;
        requestState?: string;
        isError?: boolean;
        content?: { text: string }[];
        tools?: { name: string }[];
        resources?: { uri: string }[];
      };
  readonly error?: { code: number; message: string } | undefined;
}

const FORM = { elicitation: { form: {} } };
const accept = { 'toolgate.approval': { action: 'accept', content: { approve: true } } };
let ids = 1;

/** One `tools/call` of `mod:pay` in the plain shape (the fast path's), or a retry (the SDK path's). */
async function pay(
  url: URL,
  token: string,
  args: Record<string, unknown>,
  retry?: { requestState?: unknown; inputResponses?: Record<string, unknown> },
): Promise<Answer> {
  const { status, body } = await modernRequest<{ result?: Answer['result']; error?: Answer['error'] }>(
    url,
    'tools/call',
    { name: 'mod:pay', arguments: args, ...(retry ?? {}) },
    { token, capabilities: FORM, id: ids++ },
  );
  return { status, ...body };
}

/** What a requestState binds (its JSON, as mrtr.ts encodes it). */
function bindingOf(state: string): { caller: string | null; owner: { id: string }; policyVersion: string | null } {
  return (JSON.parse(Buffer.from(state, 'base64url').toString('utf8')) as { binding: never }).binding;
}

const text = (answer: Answer): string => JSON.stringify(answer);

describe('attacks on the 2026-07-28 rounds bound once per route', { timeout: 180_000 }, () => {
  it('concurrent asks of two subjects: each state is its caller’s, moved or edited retries run nothing, one retry runs once', async () => {
    for (const fast of [true, false]) {
      const { url, paid } = await gateway(fast);
      const who = (i: number) => (i % 2 === 0 ? 'mallory' : 'bob');
      // Interleaved asks of the same call by two subjects.
      const asked = await Promise.all(
        Array.from({ length: 12 }, (_, i) => pay(url, who(i), { to: 'shared', amount: 70 })),
      );
      const states = asked.map((answer, i) => {
        expect(answer.result?.resultType, `fast ${fast}, ask ${i}: ${text(answer)}`).toBe('input_required');
        const state = answer.result!.requestState!;
        const binding = bindingOf(state);
        expect(binding.caller, `fast ${fast}, ask ${i}`).toBe(who(i));
        expect(binding.owner.id, `fast ${fast}, ask ${i}`).toBe(JSON.stringify([null, 'clientId', who(i)]));
        return state;
      });
      expect(new Set(states).size).toBe(states.length);
      // Every state retried at once by the other subject, by alice (no pay scope), with other arguments.
      const moved = await Promise.all(
        states.flatMap((state, i) => [
          pay(url, who(i + 1), { to: 'shared', amount: 70 }, { requestState: state, inputResponses: accept }),
          pay(url, 'alice', { to: 'shared', amount: 70 }, { requestState: state, inputResponses: accept }),
          pay(url, who(i), { to: 'shared', amount: 71 }, { requestState: state, inputResponses: accept }),
          pay(url, who(i), { to: 'elsewhere', amount: 70 }, { requestState: state, inputResponses: accept }),
          pay(url, who(i), { to: 'shared', amount: 70, extra: 1 }, { requestState: state, inputResponses: accept }),
        ]),
      );
      for (const answer of moved) expect(text(answer)).not.toContain('paid');
      expect(paid(), `fast ${fast}`).toEqual([]);
      // Mallory's first state, retried five times at once by her: it runs once; then replayed: refused.
      const retries = await Promise.all(
        Array.from({ length: 5 }, () =>
          pay(url, 'mallory', { to: 'shared', amount: 70 }, { requestState: states[0], inputResponses: accept }),
        ),
      );
      expect(retries.filter((a) => text(a).includes('paid 70 to shared'))).toHaveLength(1);
      const replay = await pay(
        url,
        'mallory',
        { to: 'shared', amount: 70 },
        { requestState: states[0], inputResponses: accept },
      );
      expect(replay.error?.code, text(replay)).toBe(-32602);
      // Bob's own state still runs his call, once.
      const bobs = await pay(
        url,
        'bob',
        { to: 'shared', amount: 70 },
        { requestState: states[1], inputResponses: accept },
      );
      expect(text(bobs)).toContain('paid 70 to shared');
      expect(paid(), `fast ${fast}`).toEqual(['shared:70', 'shared:70']);
    }
  });

  it('a state minted before a policy reload does not run the call after it', async () => {
    for (const fast of [true, false]) {
      const { url, paid, gateway: gw, policy } = await gateway(fast);
      const asked = await pay(url, 'mallory', { to: 'reloaded', amount: 70 });
      const state = asked.result!.requestState!;
      const before = bindingOf(state).policyVersion;
      // A narrowing reload (a rule for another tool): the version changes, the ask on pay stays the same.
      const data = parse(readFileSync(policy, 'utf8')) as { rules: unknown[] };
      data.rules.unshift({ name: 'no-era', tools: ['mod:era'], result: 'deny', reason: 'not now' });
      writeFileSync(policy, stringify(data));
      expect((await gw.reload(policy)).ok).toBe(true);
      const retried = await pay(
        url,
        'mallory',
        { to: 'reloaded', amount: 70 },
        { requestState: state, inputResponses: accept },
      );
      expect(text(retried)).not.toContain('paid');
      expect(retried.error?.code, text(retried)).toBe(-32602);
      expect(paid()).toEqual([]);
      // Asked again under the policy in force: bound to it, and the retry runs.
      const again = await pay(url, 'mallory', { to: 'reloaded', amount: 70 });
      expect(bindingOf(again.result!.requestState!).policyVersion).not.toBe(before);
      const ran = await pay(
        url,
        'mallory',
        { to: 'reloaded', amount: 70 },
        { requestState: again.result!.requestState, inputResponses: accept },
      );
      expect(text(ran)).toContain('paid 70 to reloaded');
      expect(paid()).toEqual(['reloaded:70']);
    }
  });

  it('lists interleaved with another caller’s calls and asks show each caller only what its allowlist permits', async () => {
    for (const fast of [true, false]) {
      const { url, paid } = await gateway(fast);
      const list = (token: string) =>
        modernRequest<Answer>(url, 'tools/list', {}, { token, capabilities: FORM, id: ids++ }).then((a) => a.body);
      const resources = (token: string) =>
        modernRequest<Answer>(url, 'resources/list', {}, { token, id: ids++ }).then((a) => a.body);
      const work = Array.from({ length: 30 }, (_, i) => {
        switch (i % 5) {
          case 0:
            return list('alice').then((a) => ({ kind: 'alice', a }));
          case 1:
            return list('mallory').then((a) => ({ kind: 'mallory', a }));
          case 2:
            return pay(url, 'mallory', { to: `m${i}`, amount: 70 }).then((a) => ({ kind: 'ask', a }));
          case 3:
            return pay(url, 'alice', { to: `a${i}`, amount: 1 }).then((a) => ({ kind: 'refused', a }));
          default:
            return resources('alice').then((a) => ({ kind: 'resources', a }));
        }
      });
      for (const { kind, a } of await Promise.all(work)) {
        const result = (a as Answer).result;
        if (kind === 'alice')
          expect(
            result?.tools?.map((t) => t.name),
            `fast ${fast}`,
          ).toEqual(['mod:echo']);
        if (kind === 'mallory')
          expect(result?.tools?.map((t) => t.name).sort(), `fast ${fast}`).toEqual([
            'mod:confirm',
            'mod:echo',
            'mod:pay',
          ]);
        if (kind === 'ask') expect(result?.resultType, `fast ${fast}`).toBe('input_required');
        if (kind === 'refused') expect(JSON.stringify(a)).not.toContain('paid');
        if (kind === 'resources') {
          const uris = result?.resources?.map((r) => r.uri) ?? [];
          expect(uris, `fast ${fast}`).toContain('docs://public/readme');
          expect(uris, `fast ${fast}`).not.toContain('docs://secret/keys');
        }
      }
      expect(paid()).toEqual([]);
    }
  });

  it('a resource read’s approval reads only its own URI for its own caller; a tool’s approval reads nothing', async () => {
    const resources = [
      { name: 'secrets', uri: 'docs://secret/**', result: 'ask', reason: 'a person approves reading secrets' },
      { name: 'all', result: 'allow' },
    ];
    for (const fast of [true, false]) {
      const { url } = await gateway(fast, { resources });
      const read = async (token: string, uri: string, retry?: Record<string, unknown>) =>
        (
          await postMcp<{ result?: Answer['result']; error?: Answer['error'] }>(
            url,
            { id: ids++, method: 'resources/read', params: { uri, ...(retry ?? {}), _meta: modernMeta(FORM) } },
            {
              authorization: `Bearer ${token}`,
              'mcp-protocol-version': '2026-07-28',
              'mcp-method': 'resources/read',
              'mcp-name': uri,
            },
          )
        ).body;
      const asked = await Promise.all([read('mallory', 'docs://secret/keys'), read('bob', 'docs://secret/keys')]);
      const [mine, bobs] = asked.map((a) => {
        expect(a.result?.resultType, `fast ${fast}: ${JSON.stringify(a)}`).toBe('input_required');
        return a.result!.requestState!;
      });
      const tool = (await pay(url, 'mallory', { to: 'x', amount: 70 })).result!.requestState!;
      const tries = await Promise.all([
        read('mallory', 'docs://secret/keys', { requestState: bobs, inputResponses: accept }),
        read('bob', 'docs://secret/keys', { requestState: mine, inputResponses: accept }),
        read('mallory', 'docs://secret/keys', { requestState: tool, inputResponses: accept }),
        read('mallory', 'docs://secret/other', { requestState: mine, inputResponses: accept }),
        pay(url, 'mallory', { to: 'x', amount: 70 }, { requestState: mine, inputResponses: accept }),
      ]);
      for (const [i, answer] of tries.entries()) {
        expect(JSON.stringify(answer), `fast ${fast}, try ${i}`).not.toContain('TOP SECRET');
        expect(JSON.stringify(answer), `fast ${fast}, try ${i}`).not.toContain('paid');
      }
      const ran = await read('mallory', 'docs://secret/keys', { requestState: mine, inputResponses: accept });
      expect(JSON.stringify(ran), `fast ${fast}`).toContain('TOP SECRET');
      const again = await read('mallory', 'docs://secret/keys', { requestState: mine, inputResponses: accept });
      expect(JSON.stringify(again), `fast ${fast}`).not.toContain('TOP SECRET');
    }
  });

  it('an upstream’s own round, relayed: its wrapped state answers only its own caller’s same call', async () => {
    for (const fast of [true, false]) {
      const { url, records } = await gateway(fast);
      const confirm = async (token: string, args: Record<string, unknown>, retry?: Record<string, unknown>) =>
        (
          await modernRequest<{ result?: Answer['result']; error?: Answer['error'] }>(
            url,
            'tools/call',
            { name: 'mod:confirm', arguments: args, ...(retry ?? {}) },
            { token, capabilities: FORM, id: ids++ },
          )
        ).body;
      const asked = await Promise.all([confirm('mallory', {}), confirm('bob', {})]);
      const [mine, bobs] = asked.map((a) => {
        expect(a.result?.resultType, `fast ${fast}: ${JSON.stringify(a)}`).toBe('input_required');
        return a.result!.requestState!;
      });
      const answers = { ok: { action: 'accept', content: { ok: true } } };
      const moved = await Promise.all([
        confirm('bob', {}, { requestState: mine, inputResponses: answers }),
        confirm('mallory', {}, { requestState: bobs, inputResponses: answers }),
        confirm('alice', {}, { requestState: mine, inputResponses: answers }),
        confirm('mallory', { extra: 1 }, { requestState: mine, inputResponses: answers }),
        pay(url, 'mallory', { to: 'confirm', amount: 1 }, { requestState: mine, inputResponses: answers }),
      ]);
      for (const [i, answer] of moved.entries()) {
        expect(JSON.stringify(answer), `fast ${fast}, try ${i}`).not.toContain('user said');
        expect(JSON.stringify(answer), `fast ${fast}, try ${i}`).not.toContain('paid');
      }
      const own = await confirm('mallory', {}, { requestState: mine, inputResponses: answers });
      expect(JSON.stringify(own), `fast ${fast}`).toContain('user said: accept');
      expect(records.some((r) => r.type === 'protocol')).toBe(true);
    }
  });
});
