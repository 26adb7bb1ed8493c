// Issue 25.3 for 2026-07-28: the fast path of the gateway's modern downstream (src/gateway/modern-fast.ts).
// The same seeded mix of raw 2026-07-28 POSTs — allowed, denied, asked (input_required, with and without a
// declared elicitation), a limit's max, unknown tools, bad arguments, an upstream's error result and its own
// input_required, reads allowed, denied and unroutable, headers that disagree with the body, shapes the fast
// path leaves to the SDK (a log level, a progress token, a requestState, another `_meta` key) — is sent to an
// in-process gateway over HTTP in front
// of the 2026-07-28 fixture, once with the fast path and once with it off (TOOLGATE_GATEWAY_FAST_PATH=off):
// status, content type and body must be the same byte for byte (a requestState's random part aside), and so
// must the upstream's ledger and the audit trail.
import { readFileSync } from 'node:fs';
import { IncomingMessage, request } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import { MemoryLedger, MemoryNonceStore } from '../../src/stores/memory.js';
import { plainModernCallOf, plainModernResult } from '../../src/gateway/modern-fast.js';
import { cleanupsAfterEach, fastPathFor, gatewayOverHttp, modernCallHeaders, modernMeta } from '../harness.js';
import { auditOf, modernUpstreamPolicy, normal } from './fixtures/modern-fast.js';

const cleanups = cleanupsAfterEach();
const SECRET = 'modern-fastpath-test-secret-0123456789';

interface Sent {
  /** resources/read when set (`name` is then the URI). */
  readonly read?: true;
  readonly name: string;
  readonly args?: Record<string, unknown>;
  readonly capabilities?: Record<string, unknown>;
  readonly meta?: Record<string, unknown>;
  readonly params?: Record<string, unknown>;
  readonly headers?: Record<string, string>;
  readonly id?: string | number;
}

const OPS: readonly Sent[] = [
  { name: 'mod:echo', args: { text: 'hi' } },
  { name: 'mod:echo', args: { text: 5 } },
  { name: 'mod:pay', args: { to: 'small', amount: 5 } },
  { name: 'mod:pay', args: { to: 'big', amount: 500 } },
  { name: 'mod:pay', args: { to: 'asked', amount: 70 } },
  { name: 'mod:pay', args: { to: 'asked-form', amount: 70 }, capabilities: { elicitation: { form: {} } } },
  { name: 'mod:nope', args: {} },
  { name: 'mod:fail', args: {} },
  { name: 'mod:confirm', args: {}, capabilities: { elicitation: {} } },
  { name: 'mod:confirm', args: {} },
  { name: 'mod:era', args: {} },
  { name: 'mod:echo', args: { text: 'x' }, headers: { 'mcp-name': 'mod:era' } },
  { name: 'mod:echo', args: { text: 'log' }, meta: { 'io.modelcontextprotocol/logLevel': 'debug' } },
  { name: 'mod:echo', args: { text: 'id' }, id: 'string-id' },
  { name: 'mod:echo' },
  { name: 'mod:slow', args: {}, meta: { progressToken: 'p' } },
  { name: 'mod:pay', args: { to: 'state', amount: 5 }, params: { requestState: 'garbage' } },
  { name: 'mod:echo', args: { text: 'roots' }, capabilities: { roots: { listChanged: true }, sampling: {} } },
  { name: 'mod:echo', args: { text: 'trace' }, meta: { traceparent: '00-1-2-01' } },
  { name: 'mod:echo', args: { text: 'no-version' }, headers: { 'mcp-protocol-version': '' } },
  { name: 'mod:pay', args: { to: 'bad-caps', amount: 5 }, capabilities: { roots: { listChanged: 'yes' } } },
  { read: true, name: 'docs://public/readme' },
  { read: true, name: 'docs://secret/keys' },
  { read: true, name: 'nope://where/ever' },
  { read: true, name: 'docs://public/readme', headers: { 'mcp-name': 'docs://secret/keys' } },
  { read: true, name: 'docs://public/readme', capabilities: { elicitation: { form: {} } } },
];

async function post(url: URL, sent: Sent, i: number) {
  const { 'mcp-protocol-version': version, ...rest } = sent.headers ?? {};
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-method': sent.read ? 'resources/read' : 'tools/call',
    'mcp-name': sent.name,
    ...rest,
  };
  if (version !== '') headers['mcp-protocol-version'] = version ?? '2026-07-28';
  const params = {
    ...(sent.read ? { uri: sent.name } : { name: sent.name }),
    ...(sent.args ? { arguments: sent.args } : {}),
    _meta: { ...modernMeta(sent.capabilities), ...sent.meta },
    ...sent.params,
  };
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: sent.id ?? i,
      method: sent.read ? 'resources/read' : 'tools/call',
      params,
    }),
  });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    challenge: response.headers.get('www-authenticate'),
    text,
  };
}

async function gateway(fast: boolean) {
  const { policy, ledger } = await modernUpstreamPolicy(cleanups, 'modern-fastpath', {
    name: 'six-echoes',
    tool: 'mod:echo',
    max: 6,
  });
  fastPathFor(cleanups, fast);
  const on = await gatewayOverHttp(cleanups, policy, {
    gateway: () => ({
      requestState: { secret: SECRET, nonces: new MemoryNonceStore(), ledger: new MemoryLedger() },
    }),
  });
  // The modern handler (and whether it has a fast path) is made on the first 2026-07-28 request.
  await post(on.url, { name: 'mod:era', args: {} }, 0);
  on.records.length = 0;
  return { ...on, ledger };
}

describe('the fast path of the 2026-07-28 downstream', { timeout: 120_000 }, () => {
  it('answers a seeded random mix byte for byte as the SDK path does, with the same upstream effects and audit', async () => {
    const seed = Date.now() % 100_000;
    const next = prng(seed);
    const plan = [...OPS.keys(), ...Array.from({ length: 50 }, () => Math.floor(next() * OPS.length))];
    const runs = [];
    for (const fast of [true, false]) {
      const { url, records, ledger } = await gateway(fast);
      const answers = [];
      for (const [i, op] of plan.entries()) answers.push(await post(url, OPS[op]!, i + 1));
      await new Promise((resolve) => setTimeout(resolve, 100));
      runs.push({ answers: normal(answers), paid: readFileSync(ledger, 'utf8'), audit: auditOf(records) });
    }
    const [fast, sdk] = runs as [(typeof runs)[0], (typeof runs)[0]];
    for (const [i, answer] of (fast.answers as unknown[]).entries())
      expect(answer, `seed ${seed}, call ${i} (op ${plan[i]})`).toEqual((sdk.answers as unknown[])[i]);
    expect(fast.paid, `seed ${seed}`).toBe(sdk.paid);
    expect(fast.audit, `seed ${seed}`).toEqual(sdk.audit);
    const text = JSON.stringify(fast.answers);
    expect(text).toContain('input_required');
    expect(text).toContain('six-echoes');
    expect(fast.paid).not.toMatch(/big|asked/);
  });

  it('frames a plain JSON answer by its length, not in chunks (one body for the client to read)', async () => {
    const { url } = await gateway(true);
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 5,
      method: 'tools/call',
      params: { name: 'mod:echo', arguments: { text: 'framed é' }, _meta: modernMeta() },
    });
    const answer = await new Promise<{ headers: IncomingMessage['headers']; bytes: Buffer }>((resolve, reject) => {
      const req = request(url, {
        method: 'POST',
        headers: modernCallHeaders('mod:echo'),
      });
      req.once('error', reject);
      req.once('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('end', () => resolve({ headers: res.headers, bytes: Buffer.concat(chunks) }));
      });
      req.end(body);
    });
    expect(answer.bytes.toString('utf8')).toContain('echo: framed é');
    expect(answer.headers['transfer-encoding']).toBeUndefined();
    expect(answer.headers['content-length']).toBe(String(answer.bytes.length));
  });

  it('answers odd headers and shapes as the SDK path does (duplicates, encodings, envelopes, ids)', async () => {
    const meta = modernMeta();
    const call = (params: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'mod:echo', arguments: { text: 'odd' }, _meta: meta, ...params },
        ...extra,
      });
    const base = [
      'Content-Type',
      'application/json',
      'Accept',
      'application/json, text/event-stream',
      'MCP-Protocol-Version',
      '2026-07-28',
      'Mcp-Method',
      'tools/call',
    ];
    const cases: [string[], string][] = [
      [[...base, 'Mcp-Name', 'mod:echo'], call()],
      [[...base, 'Mcp-Name', 'mod:echo', 'Content-Type', 'application/json'], call()],
      [[...base, 'Mcp-Name', 'mod:echo', 'Mcp-Name', 'mod:echo'], call()],
      [[...base, 'Mcp-Name', 'mod:echo', 'MCP-Protocol-Version', '2026-07-28'], call()],
      [[...base, 'Mcp-Name', `=?base64?${Buffer.from('mod:echo').toString('base64')}?=`], call()],
      [[...base.slice(2), 'Content-Type', 'application/json; charset=utf-8', 'Mcp-Name', 'mod:echo'], call()],
      [[...base.slice(2), 'Content-Type', 'text/plain', 'Mcp-Name', 'mod:echo'], call()],
      [[...base, 'Mcp-Name', 'mod:echo'], call({ arguments: JSON.parse('{"__proto__": {"x": 1}, "text": "p"}') })],
      [[...base, 'Mcp-Name', 'mod:echo'], call({}, { id: 1.5 })],
      [[...base, 'Mcp-Name', 'mod:echo'], call({}, { id: null })],
      [[...base, 'Mcp-Name', 'mod:echo'], call({}, { jsonrpc: '1.0' })],
      [
        [...base, 'Mcp-Name', 'mod:echo'],
        call({
          _meta: {
            ...meta,
            'io.modelcontextprotocol/clientInfo': { name: 'r', version: '1', websiteUrl: 'https://x' },
          },
        }),
      ],
      [
        [...base, 'Mcp-Name', 'mod:echo'],
        call({ _meta: modernMeta({ elicitation: { form: { applyDefaults: true } } }) }),
      ],
      [
        [...base, 'Mcp-Name', 'mod:echo'],
        call({ _meta: modernMeta({ elicitation: { form: { applyDefaults: 'yes' } } }) }),
      ],
      [[...base, 'Mcp-Name', 'mod:echo'], call({ _meta: modernMeta({}, '2025-11-25') })],
      [[...base, 'Mcp-Name', 'mod:echo'], call({ task: {} })],
      [[...base, 'Mcp-Name', 'mod:echo'], call({ _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } })],
      [[...base, 'Mcp-Name', 'mod:echo', 'Mcp-Param-Text', 'odd'], call()],
      [[...base.slice(0, 6), 'Mcp-Method', 'TOOLS/CALL', 'Mcp-Name', 'mod:echo'], call()],
      [[...base, 'Mcp-Name', ' mod:echo '], call()],
      [[...base, 'Mcp-Name', 'mod:echo'], call({ name: 'mod:echo ' })],
      [[...base, 'Mcp-Name', 'mod:echo'], call({ arguments: [] })],
    ];
    const send = (url: URL, headers: string[], body: string) =>
      new Promise<{ status: number; type: string | undefined; text: string }>((resolve, reject) => {
        const req = request(url, {
          method: 'POST',
          headers: ['Host', url.host, ...headers, 'Content-Length', String(Buffer.byteLength(body))],
        });
        req.once('error', reject);
        req.once('response', (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.once('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], text }));
        });
        req.end(body);
      });
    const runs = [];
    for (const fast of [true, false]) {
      const { url, records, ledger } = await gateway(fast);
      const answers = [];
      for (const [headers, body] of cases) answers.push(await send(url, headers, body));
      runs.push({ answers: normal(answers), paid: readFileSync(ledger, 'utf8'), audit: auditOf(records) });
    }
    const [fast, sdk] = runs as [(typeof runs)[0], (typeof runs)[0]];
    for (const [i, answer] of (fast.answers as unknown[]).entries())
      expect(answer, `case ${i}`).toEqual((sdk.answers as unknown[])[i]);
    expect(fast.audit).toEqual(sdk.audit);
    for (const answer of fast.answers as { text: string }[]) expect(answer.text).toContain('"jsonrpc":"2.0"');
  });

  it('takes only the plain shape, and encodes only results the SDK schema keeps unchanged', () => {
    const req = (headers: Record<string, string>): IncomingMessage => {
      const message = new IncomingMessage(new Socket());
      for (const [name, value] of Object.entries(headers)) {
        message.headers[name] = value;
        message.rawHeaders.push(name, value);
      }
      return message;
    };
    const headers = {
      'content-type': 'application/json',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'a:b',
    };
    const body = (params: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'a:b', arguments: {}, _meta: modernMeta(), ...params },
      ...extra,
    });
    expect(plainModernCallOf(req(headers), body({}))).toBeDefined();
    expect(plainModernCallOf(req({ ...headers, 'mcp-name': 'a:c' }), body({}))).toBeUndefined();
    expect(plainModernCallOf(req({ ...headers, 'mcp-protocol-version': '2025-11-25' }), body({}))).toBeUndefined();
    expect(plainModernCallOf(req(headers), body({}, { extra: 1 }))).toBeUndefined();
    expect(plainModernCallOf(req(headers), body({ requestState: 'x' }))).toBeUndefined();
    expect(plainModernCallOf(req(headers), body({ inputResponses: {} }))).toBeUndefined();
    expect(plainModernCallOf(req(headers), body({ _meta: { ...modernMeta(), progressToken: 1 } }))).toBeUndefined();
    expect(plainModernCallOf(req(headers), body({ _meta: modernMeta({ extensions: { x: {} } }) }))).toBeUndefined();
    expect(plainModernCallOf(req(headers), body({ _meta: modernMeta({}, '2025-11-25') }))).toBeUndefined();
    expect(plainModernCallOf(req(headers), body({ arguments: [] }))).toBeUndefined();
    expect(plainModernCallOf(req(headers), body({}, { id: 1.5 }))).toBeUndefined();
    const twice = req(headers);
    twice.rawHeaders.push('Content-Type', 'application/json');
    expect(plainModernCallOf(twice, body({}))).toBeUndefined();
    const text = { type: 'text', text: 'x' };
    expect(plainModernResult({ content: [text] })).toBe(true);
    expect(plainModernResult({ content: [text], isError: true, structuredContent: { a: 1 } })).toBe(true);
    expect(
      plainModernResult({
        content: [text],
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'u', version: '1' } },
      }),
    ).toBe(true);
    expect(plainModernResult({ content: [{ ...text, annotations: {} }] })).toBe(false);
    expect(plainModernResult({ content: [text], _meta: { other: 1 } })).toBe(false);
    expect(plainModernResult({ content: [text], resultType: 'complete' })).toBe(false);
    expect(plainModernResult({ content: [{ type: 'image', data: '', mimeType: 'image/png' }] })).toBe(false);
    expect(plainModernResult({ content: [text], isError: 'yes' })).toBe(false);
  });
});
