// Attacks on the 2026-07-28 fast path (src/gateway/modern-fast.ts) over real HTTP, in front of the
// 2026-07-28 fixture, with the fast path on and off (TOOLGATE_GATEWAY_FAST_PATH=off): headers that disagree
// with the body, duplicated headers, a refused call replayed by the SDK handler (run once, audited once,
// counted once), ids shared by concurrent requests (each answer its own), two subjects interleaved (each
// decided and audited as itself), resource URIs spelled to dodge a deny (and spelled again: the memo of
// normalResourceUri), batches, an oversized body, and a client that goes away. Each test FAILS when the
// attack gets through.
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { GatewayAuditRecord } from '../../src/gateway/index.js';
import { MemoryLedger, MemoryNonceStore } from '../../src/stores/memory.js';
import { cleanupsAfterEach, fastPathFor, gatewayOverHttp, modernMeta } from '../harness.js';
import { modernUpstreamPolicy } from './fixtures/modern-fast.js';

const cleanups = cleanupsAfterEach();
const SECRET = 'atk-fast-modern-secret-0123456789abcdef';

/** alice may echo; mallory may echo and pay. */
const TOKENS: Record<string, string[]> = { alice: ['mod:echo'], mallory: ['mod:echo', 'mod:pay', 'mod:fail'] };

/** Each audit record as JSON when the sink got it (a later change to the record would not show here). */
const snapshots: { record: GatewayAuditRecord; json: string }[] = [];

async function gateway(fast: boolean, extra: Record<string, unknown> = {}, tokens = TOKENS) {
  const { policy, ledger } = await modernUpstreamPolicy(
    cleanups,
    'atk-fast-modern',
    { name: 'four-fails', tool: 'mod:fail', max: 4 },
    extra,
  );
  const records: GatewayAuditRecord[] = [];
  fastPathFor(cleanups, fast);
  const on = await gatewayOverHttp(cleanups, policy, {
    gateway: () => ({
      requestState: { secret: SECRET, nonces: new MemoryNonceStore(), ledger: new MemoryLedger() },
      audit: (record: GatewayAuditRecord) => {
        records.push(record);
        snapshots.push({ record, json: JSON.stringify(record) });
      },
    }),
    http: () => ({
      audience: false,
      authenticate: async (token: string) => {
        const scopes = tokens[token];
        if (!scopes) throw new Error('unknown token');
        return { token, clientId: token, scopes };
      },
    }),
  });
  // The modern handler (and whether it has a fast path) is made on the first 2026-07-28 request.
  await send(on.url, { token: 'mallory', body: call(0, 'mod:echo', { text: 'warm' }) });
  records.length = 0;
  return { ...on, records, ledger };
}

function call(id: unknown, name: string, args?: Record<string, unknown>, meta = modernMeta()) {
  return {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, ...(args ? { arguments: args } : {}), _meta: meta },
  };
}

function read(id: unknown, uri: string) {
  return { jsonrpc: '2.0', id, method: 'resources/read', params: { uri, _meta: modernMeta() } };
}

/** One POST with raw header lines (duplicates kept); its status and text. */
function send(
  url: URL,
  options: {
    readonly token: string;
    readonly body: unknown;
    readonly headers?: string[];
    /** Replaces the standard headers (method, name, version). */
    readonly bare?: boolean;
    readonly text?: string;
  },
): Promise<{ status: number; text: string; challenge?: string }> {
  const text = options.text ?? JSON.stringify(options.body);
  const body = options.body as { method?: string; params?: { name?: string; uri?: string } };
  const standard = options.bare
    ? []
    : [
        'MCP-Protocol-Version',
        '2026-07-28',
        'Mcp-Method',
        String(body.method),
        'Mcp-Name',
        String(body.params?.name ?? body.params?.uri),
      ];
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      headers: [
        'Host',
        url.host,
        'Authorization',
        `Bearer ${options.token}`,
        'Content-Type',
        'application/json',
        'Accept',
        'application/json, text/event-stream',
        ...standard,
        ...(options.headers ?? []),
        'Content-Length',
        String(Buffer.byteLength(text)),
      ],
    });
    req.once('error', reject);
    req.once('response', (res) => {
      let answer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (answer += chunk));
      res.once('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          text: answer,
          ...(res.headers['www-authenticate'] ? { challenge: res.headers['www-authenticate'] } : {}),
        }),
      );
    });
    req.end(text);
  });
}

const tools = (records: readonly GatewayAuditRecord[]) =>
  records.filter((r) => r.type === 'tool') as unknown as {
    caller: string | null;
    decision: { tool: string; effect: string };
    status: string;
  }[];

describe('attacks on the 2026-07-28 fast path', { timeout: 180_000 }, () => {
  it('headers naming an allowed tool do not carry a refused body past the gate (single, duplicated, case)', async () => {
    for (const fast of [true, false]) {
      const { url, ledger, records } = await gateway(fast);
      const big = call(1, 'mod:pay', { to: 'big', amount: 500 });
      const answers = [
        // The header names the echo, the body the refused payment.
        await send(url, {
          token: 'mallory',
          body: big,
          bare: true,
          headers: ['MCP-Protocol-Version', '2026-07-28', 'Mcp-Method', 'tools/call', 'Mcp-Name', 'mod:echo'],
        }),
        // Two Mcp-Name headers, one of them the body's.
        await send(url, { token: 'mallory', body: big, headers: ['Mcp-Name', 'mod:echo'] }),
        // Two Mcp-Method headers.
        await send(url, { token: 'mallory', body: big, headers: ['Mcp-Method', 'resources/read'] }),
        // Headers in odd case, a JSON content type with parameters, sent twice.
        await send(url, {
          token: 'mallory',
          body: big,
          bare: true,
          headers: [
            'mcp-protocol-version',
            '2026-07-28',
            'MCP-METHOD',
            'tools/call',
            'mCp-NaMe',
            'mod:pay',
            'content-type',
            'Application/JSON; charset=UTF-8',
          ],
        }),
        // The body's name with trailing space vs the header's.
        await send(url, {
          token: 'mallory',
          body: call(2, 'mod:pay ', { to: 'big', amount: 500 }),
          bare: true,
          headers: ['MCP-Protocol-Version', '2026-07-28', 'Mcp-Method', 'tools/call', 'Mcp-Name', 'mod:pay'],
        }),
        // The refused call in the plain shape (the fast path's own).
        await send(url, { token: 'mallory', body: big }),
        // Alice's token does not cover pay.
        await send(url, { token: 'alice', body: call(3, 'mod:pay', { to: 'alice', amount: 5 }) }),
      ];
      expect(readFileSync(ledger, 'utf8'), `fast ${fast}`).toBe('');
      for (const answer of answers) expect(answer.text, `fast ${fast}`).not.toContain('paid');
      expect(tools(records).every((r) => r.decision.effect !== 'allow' || r.decision.tool !== 'mod:pay')).toBe(true);
    }
  });

  it('a refused, asked or failing call is run, audited and counted once (the replay runs nothing)', async () => {
    const runs = [];
    for (const fast of [true, false]) {
      const { url, ledger, records } = await gateway(fast);
      const answers = [];
      answers.push(await send(url, { token: 'mallory', body: call(1, 'mod:pay', { to: 'asked', amount: 70 }) }));
      answers.push(await send(url, { token: 'mallory', body: call(2, 'mod:pay', { to: 'big', amount: 500 }) }));
      answers.push(await send(url, { token: 'mallory', body: call(3, 'mod:nope', {}) }));
      answers.push(await send(url, { token: 'mallory', body: call(4, 'mod:pay', { to: 'small', amount: 5 }) }));
      // Six failing calls against a limit of four (an upstream error result each: not in the encoded shape).
      for (let i = 0; i < 6; i++)
        answers.push(await send(url, { token: 'mallory', body: call(10 + i, 'mod:fail', {}) }));
      await new Promise((resolve) => setTimeout(resolve, 100));
      const audit = tools(records).map((r) => `${r.decision.tool}:${r.decision.effect}:${r.status}`);
      runs.push({
        ledger: readFileSync(ledger, 'utf8'),
        audit,
        answers: answers.map((a) => [
          a.status,
          a.text.replace(/policy-file-[0-9a-f]+/g, '').replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<time>'),
        ]),
      });
    }
    const [fast, sdk] = runs as [(typeof runs)[0], (typeof runs)[0]];
    expect(fast.ledger).toBe('small:5\n');
    expect(fast.ledger).toBe(sdk.ledger);
    expect(fast.audit).toEqual(sdk.audit);
    expect(fast.audit.filter((a) => a.startsWith('mod:fail:allow'))).toHaveLength(4);
    expect(fast.audit).toHaveLength(10);
    expect(fast.answers.map((a) => a[0])).toEqual(sdk.answers.map((a) => a[0]));
    for (const [i, answer] of fast.answers.entries())
      expect(String(answer[1]).replace(/"requestState":"[^"]+"/, ''), `call ${i}`).toBe(
        String(sdk.answers[i]![1]).replace(/"requestState":"[^"]+"/, ''),
      );
  });

  it('concurrent requests under one id and from two subjects: each answer is its own, each decided as its caller', async () => {
    for (const fast of [true, false]) {
      const { url, ledger, records } = await gateway(fast);
      const sent = Array.from({ length: 24 }, (_, i) => {
        const who = i % 2 === 0 ? 'alice' : 'mallory';
        return {
          who,
          i,
          answer: send(url, { token: who, body: call(7, 'mod:pay', { to: `${who}-${i}`, amount: 1 }) }),
        };
      });
      const echoes = Array.from({ length: 12 }, (_, i) => ({
        i,
        answer: send(url, { token: i % 2 ? 'alice' : 'mallory', body: call(7, 'mod:echo', { text: `t${i}` }) }),
      }));
      for (const { who, i, answer } of sent) {
        const { text } = await answer;
        expect(text).toContain('"id":7');
        if (who === 'alice') expect(text, `alice ${i}`).not.toContain('paid');
        else expect(text, `mallory ${i}`).toContain(`paid 1 to mallory-${i}`);
      }
      for (const { i, answer } of echoes) expect((await answer).text).toContain(`echo: t${i}"`);
      const paid = readFileSync(ledger, 'utf8').split('\n').filter(Boolean);
      expect(
        paid.every((line) => line.startsWith('mallory-')),
        `fast ${fast}`,
      ).toBe(true);
      expect(paid).toHaveLength(12);
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (const record of tools(records)) {
        if (record.decision.tool !== 'mod:pay') continue;
        expect(record.decision.effect).toBe(record.caller === 'alice' ? 'deny' : 'allow');
      }
      expect(tools(records).filter((r) => r.decision.tool === 'mod:pay' && r.caller === 'mallory')).toHaveLength(12);
      expect(tools(records).filter((r) => r.decision.tool === 'mod:pay' && r.caller === 'alice')).toHaveLength(12);
    }
  });

  it('resource URIs spelled to dodge a deny are refused, the second time too (the normalisation memo)', async () => {
    const spellings = [
      'docs://secret/keys',
      'docs://SECRET/keys',
      'docs://secret./keys',
      'docs://secret/%6Beys',
      'docs://secret//keys',
      'docs://secret/public/../keys',
      'DOCS://secret/keys',
      'docs://secret/keys?',
      'docs://secret/keys#x',
      'docs://Secret./%6beys',
      'docs://secret/ke%79s',
      'docs://public/../secret/keys',
      'docs://public/%2e%2e/secret/keys',
    ];
    for (const fast of [true, false]) {
      const { url, records } = await gateway(fast);
      for (let round = 0; round < 2; round++)
        for (const [i, uri] of spellings.entries()) {
          const { text } = await send(url, { token: 'mallory', body: read(i, uri) });
          expect(text, `fast ${fast}, round ${round}: ${uri}`).not.toContain('TOP SECRET');
        }
      // The public one still reads (the deny is not everything).
      expect((await send(url, { token: 'mallory', body: read(99, 'docs://public/readme') })).text).toContain(
        'public readme',
      );
      expect(records.some((r) => r.type === 'resource')).toBe(true);
    }
  });

  it('a batch, an oversized body and a client that leaves run nothing refused and nothing twice', async () => {
    for (const fast of [true, false]) {
      const { url, ledger } = await gateway(fast);
      const batch = [
        call(1, 'mod:pay', { to: 'batch-big', amount: 500 }),
        call(2, 'mod:pay', { to: 'batch-small', amount: 2 }),
      ];
      await send(url, { token: 'mallory', body: batch, bare: true, headers: ['MCP-Protocol-Version', '2026-07-28'] });
      const huge = call(3, 'mod:pay', { to: 'huge', amount: 1, pad: 'x'.repeat(4 * 1024 * 1024 + 10) });
      const big = await send(url, { token: 'mallory', body: huge });
      expect(big.status).toBe(413);
      // A client that sends its call and goes away at once.
      await new Promise<void>((resolve) => {
        const body = JSON.stringify(call(4, 'mod:pay', { to: 'left', amount: 3 }));
        const req = request(url, {
          method: 'POST',
          headers: [
            'Host',
            url.host,
            'Authorization',
            'Bearer mallory',
            'Content-Type',
            'application/json',
            'Accept',
            'application/json, text/event-stream',
            'MCP-Protocol-Version',
            '2026-07-28',
            'Mcp-Method',
            'tools/call',
            'Mcp-Name',
            'mod:pay',
            'Content-Length',
            String(Buffer.byteLength(body)),
          ],
        });
        req.once('error', () => resolve());
        req.end(body, () => setTimeout(() => (req.destroy(), resolve()), 5));
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      const paid = readFileSync(ledger, 'utf8');
      expect(paid, `fast ${fast}`).not.toMatch(/batch-big|huge/);
      // At most once each.
      for (const name of ['batch-small', 'left']) expect(paid.split(name).length - 1).toBeLessThanOrEqual(1);
    }
  });

  it('replays of concurrent refusals, asks and failures answer each request with its own outcome; audit lines never change', async () => {
    for (const fast of [true, false]) {
      snapshots.length = 0;
      const { url, ledger } = await gateway(fast);
      const kinds = [
        (i: number) => ({
          token: 'mallory',
          body: call(i, 'mod:pay', { to: `asked-${i}`, amount: 70 }, modernMeta({ elicitation: { form: {} } })),
          expect: 'input_required',
        }),
        (i: number) => ({ token: 'alice', body: call(i, 'mod:nope', {}), expect: 'mod:nope' }),
        (i: number) => ({ token: 'mallory', body: call(i, 'mod:fail', {}), expect: 'fail' }),
        (i: number) => ({
          token: 'alice',
          body: call(i, 'mod:pay', { to: `alice-${i}`, amount: 1 }),
          expect: 'refused',
        }),
        (i: number) => ({ token: 'mallory', body: call(i, 'mod:echo', { text: `e${i}` }), expect: `echo: e${i}` }),
      ];
      const sent = Array.from({ length: 40 }, (_, i) => kinds[i % kinds.length]!(1000 + i));
      const answers = await Promise.all(sent.map((one) => send(url, one)));
      for (const [i, answer] of answers.entries()) {
        expect(answer.text, `fast ${fast}, request ${i}`).toContain(`"id":${1000 + i}`);
        expect(answer.text, `fast ${fast}, request ${i}`).toContain(sent[i]!.expect);
      }
      expect(readFileSync(ledger, 'utf8')).toBe('');
      await new Promise((resolve) => setTimeout(resolve, 200));
      for (const { record, json } of snapshots) expect(JSON.stringify(record)).toBe(json);
      expect(snapshots.length).toBeGreaterThanOrEqual(40);
    }
  });

  it('a step-up (a scope would cover the refused tool) answers 403 and its challenge alike, and runs nothing', async () => {
    const runs = [];
    for (const fast of [true, false]) {
      const { url, ledger } = await gateway(
        fast,
        { scopes: { echo: ['mod:echo'], pay: ['mod:pay', 'mod:fail'] } },
        { alice: ['mod:echo'], mallory: ['mod:echo', 'mod:pay'] },
      );
      const answers = [];
      for (let i = 0; i < 3; i++) {
        answers.push(await send(url, { token: 'alice', body: call(i, 'mod:pay', { to: `alice-${i}`, amount: 1 }) }));
        answers.push(await send(url, { token: 'mallory', body: call(10 + i, 'mod:pay', { to: `m-${i}`, amount: 1 }) }));
      }
      runs.push({
        answers: answers.map((a) => ({ ...a, challenge: a.challenge?.replace(/127\.0\.0\.1:\d+/, '<host>') })),
        ledger: readFileSync(ledger, 'utf8'),
      });
    }
    const [fast, sdk] = runs as [(typeof runs)[0], (typeof runs)[0]];
    expect(fast.answers).toEqual(sdk.answers);
    expect(fast.answers.filter((a) => a.status === 403)).toHaveLength(3);
    for (const answer of fast.answers.filter((a) => a.status === 403))
      expect(answer.challenge).toContain('error="insufficient_scope", scope="pay"');
    expect(fast.ledger).toBe('m-0:1\nm-1:1\nm-2:1\n');
    expect(sdk.ledger).toBe(fast.ledger);
  });
});
