// Issue 25.3: the gateway's raw POSTs towards a 2026-07-28 HTTP upstream (src/gateway/upstream-raw-http.ts),
// against the SDK transport's (TOOLGATE_GATEWAY_FAST_PATH=off). A scripted upstream stands in front of the
// 2026-07-28 fixture: discovery, listings and every other request go through to the fixture; an `echo` whose
// text is `shape:N` is answered with shape N — plain and reordered results, extra and odd members (an own
// `__proto__`, malformed serverInfos, a progressToken object), error results, structured content, JSON-RPC
// errors with and without data, SSE streams with notifications before the answer, a JSON batch, a BOM, a 400
// carrying the call's JSON-RPC error (or another's, or text), other statuses, an unexpected content type,
// input_required, an invalid result, an answer that never comes (the call's timeout). The same seeded mix of
// calls through the gateway with and without the fast path must answer the client byte for byte alike, with
// the same audit trail and the same headers seen upstream; an answer stream that ends without the answer
// fails the call closed (its outcome unknown), POSTed once; a client that goes away closes the upstream POST.
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import { httpFixture, MODERN } from '../mcp/fixtures/processes.js';
import {
  cleanupsAfterEach,
  fastPathFor,
  forwardHttp,
  gatewayOverHttp,
  loopbackServer,
  modernCallHeaders,
  modernMeta,
  tempDir,
  writePolicy,
} from '../harness.js';
import { auditOf, normal } from './fixtures/modern-fast.js';

const cleanups = cleanupsAfterEach();

type Shape = (id: unknown, res: ServerResponse) => void;

const json = (res: ServerResponse, body: unknown, status = 200, type = 'application/json'): void =>
  void res.writeHead(status, { 'content-type': type }).end(typeof body === 'string' ? body : JSON.stringify(body));
const sse = (res: ServerResponse, ...messages: unknown[]): void => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const m of messages) res.write(`event: message\ndata: ${JSON.stringify(m)}\n\n`);
  res.end();
};
const text = (t: string) => ({ type: 'text', text: t });
const INFO = { 'io.modelcontextprotocol/serverInfo': { name: 'scripted', version: '1' } };

const SHAPES: readonly Shape[] = [
  (id, res) =>
    json(res, { result: { content: [text('plain')], resultType: 'complete', _meta: INFO }, jsonrpc: '2.0', id }),
  (id, res) =>
    json(res, { id, result: { z: 1, resultType: 'complete', content: [text('order')], a: 2 }, jsonrpc: '2.0' }),
  (id, res) =>
    json(
      res,
      `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"resultType":"complete","content":[],"__proto__":{"isError":true}}}`,
    ),
  (id, res) =>
    json(res, {
      jsonrpc: '2.0',
      id,
      result: { resultType: 'complete', content: [], _meta: { 'io.modelcontextprotocol/serverInfo': 5 } },
    }),
  (id, res) =>
    json(res, { jsonrpc: '2.0', id, result: { resultType: 'complete', content: [], _meta: { progressToken: {} } } }),
  (id, res) =>
    json(res, {
      jsonrpc: '2.0',
      id,
      result: {
        resultType: 'complete',
        content: [],
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 's', version: '1', title: 5 } },
      },
    }),
  (id, res) =>
    json(res, {
      jsonrpc: '2.0',
      id,
      result: {
        resultType: 'complete',
        content: [],
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 5, version: '1' }, x: 1 },
      },
    }),
  (id, res) =>
    json(res, { jsonrpc: '2.0', id, result: { resultType: 'complete', content: [text('bad')], isError: true } }),
  (id, res) =>
    json(res, {
      jsonrpc: '2.0',
      id,
      result: { resultType: 'complete', content: [text('{}')], structuredContent: { n: 1 } },
    }),
  (id, res) => json(res, { jsonrpc: '2.0', id, error: { code: -32000, message: 'upstream says no', data: { x: 1 } } }),
  (id, res) => json(res, { jsonrpc: '2.0', id, error: { code: -32001, message: 'odd', extra: 1 } }),
  (id, res) =>
    sse(
      res,
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'nobody', progress: 1 } },
      { jsonrpc: '2.0', id, result: { resultType: 'complete', content: [text('after progress')] } },
    ),
  (id, res) =>
    sse(
      res,
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hello' } },
      { jsonrpc: '2.0', id, result: { resultType: 'complete', content: [text('after a log')] } },
    ),
  (id, res) =>
    json(res, [
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'batched' } },
      { jsonrpc: '2.0', id, result: { resultType: 'complete', content: [text('batched')] } },
    ]),
  (id, res) =>
    json(
      res,
      `\ufeff${JSON.stringify({ jsonrpc: '2.0', id, result: { resultType: 'complete', content: [text('bom')] } })}`,
    ),
  (id, res) => json(res, { jsonrpc: '2.0', id, error: { code: -32602, message: 'bad params, with a 400' } }, 400),
  // Another request's error (an id that is none of the gateway's: the raw and SDK ids differ, not this text).
  (_id, res) => json(res, { jsonrpc: '2.0', id: 'another-call', error: { code: -32602, message: 'another' } }, 400),
  (_id, res) => json(res, 'Bad Request', 400, 'text/plain'),
  (_id, res) => json(res, 'it broke', 500, 'text/plain'),
  (_id, res) => json(res, { error: 'Session not found' }, 404),
  (_id, res) => json(res, 'hi', 200, 'text/plain'),
  (id, res) =>
    json(res, {
      jsonrpc: '2.0',
      id,
      result: {
        resultType: 'input_required',
        inputRequests: {
          q: {
            method: 'elicitation/create',
            params: { mode: 'form', message: 'ok?', requestedSchema: { type: 'object', properties: {} } },
          },
        },
      },
    }),
  (id, res) => json(res, { jsonrpc: '2.0', id, result: { resultType: 'complete', content: 'not an array' } }),
  (id, res) =>
    json(res, {
      jsonrpc: '2.0',
      id,
      result: { resultType: 'complete', content: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }] },
    }),
  (id, res) =>
    json(
      res,
      { jsonrpc: '2.0', id, result: { resultType: 'complete', content: [text('charset')] } },
      200,
      'Application/JSON; charset=utf-8',
    ),
  // Results the plain reading must leave to the SDK's schemas (raw 2026-07-28 tools/call, issue 25.3).
  (id, res) =>
    json(res, { jsonrpc: '2.0', id, result: { resultType: 'complete', content: [text('odd')], isError: 'yes' } }),
  (id, res) =>
    json(res, {
      jsonrpc: '2.0',
      id,
      result: { resultType: 'complete', content: [text('[]')], structuredContent: [1] },
    }),
  (id, res) =>
    json(res, {
      jsonrpc: '2.0',
      id,
      result: { resultType: 'complete', content: [{ ...text('noted'), annotations: { audience: ['user'] } }] },
    }),
  (id, res) =>
    json(res, {
      jsonrpc: '2.0',
      id,
      result: { resultType: 'complete', content: [text('meta')], _meta: { ...INFO, 'example.com/x': 1 } },
    }),
  (id, res) =>
    json(
      res,
      `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"resultType":"complete","content":[{"type":"text","text":"p","__proto__":{"x":1}}]}}`,
    ),
  (id, res) =>
    json(res, {
      jsonrpc: '2.0',
      id,
      result: { resultType: 'complete', content: [text('{}')], structuredContent: { n: 'not a number' } },
    }),
  (id, res) => json(res, { jsonrpc: '2.0', id, result: { resultType: 'complete', content: [text('ttl')], ttlMs: 5 } }),
  (id, res) => json(res, { jsonrpc: '2.0', id, result: { resultType: 'input_required' } }),
  (id, res) => json(res, { jsonrpc: '2.0', id, result: { resultType: 'input_required', requestState: 'upstream-s' } }),
  (id, res) =>
    json(
      res,
      `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"resultType":"complete","content":[],"isError":false,"isError":true}}`,
    ),
  (id, res) =>
    json(res, {
      jsonrpc: '2.0',
      id,
      result: { resultType: 'complete', content: [text('sc')], structuredContent: { n: 2 }, _meta: {} },
    }),
];

/** A tool the scripted front adds to the fixture's list: `echo`'s input, an output schema (checked on both paths). */
const SHAPED = {
  name: 'shaped',
  description: 'Answers with a scripted shape',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
};

/** Answers the era check refuses (the upstream is then reconnected): a task not asked for, 2025 shapes. */
const ERA: readonly Shape[] = [
  (id, res) =>
    json(res, { jsonrpc: '2.0', id, result: { resultType: 'task', taskId: 't1', status: 'completed', content: [] } }),
  (id, res) => json(res, { jsonrpc: '2.0', id, result: { content: [text('a 2025 answer')] } }),
  (id, res) => json(res, { jsonrpc: '2.0', id, result: { resultType: 5, content: [text('odd type')] } }),
  (id, res) => json(res, { jsonrpc: '2.0', id, error: { code: -32022, message: 'unsupported version' } }),
  (id, res) =>
    sse(
      res,
      { jsonrpc: '2.0', id: 'up-1', method: 'elicitation/create', params: { mode: 'form', message: 'x?' } },
      { jsonrpc: '2.0', id, result: { resultType: 'complete', content: [text('after a request')] } },
    ),
];

/** The index of the shape that never answers (the call's timeout answers it). */
const SILENT = SHAPES.length;
/** The index of the shape whose stream ends without the answer. */
const SHORT = SHAPES.length + 1;

/** The 2026-07-28 fixture behind a scripted front; the headers of each scripted call and whether its POST closed. */
async function scripted() {
  const fixture = await httpFixture(MODERN);
  cleanups.push(() => fixture.stop());
  const seen: {
    headers: IncomingMessage['headers'];
    closed: boolean;
    body: Record<string, unknown>;
    length: number;
  }[] = [];
  const url = await loopbackServer(
    cleanups,
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const message = body.length > 0 ? (JSON.parse(body.toString('utf8')) as Record<string, unknown>) : {};
        const params = message['params'] as { name?: unknown; arguments?: { text?: unknown } } | undefined;
        const asked = /^(shape|era):(\d+)$/.exec(String(params?.arguments?.text));
        if (message['method'] === 'tools/list') return void listed(fixture.url, req, body, res);
        if (message['method'] === 'tools/call' && (params?.name === 'echo' || params?.name === 'shaped') && asked) {
          const one = { headers: req.headers, closed: false, body: message, length: body.length };
          seen.push(one);
          res.on('close', () => (one.closed = true));
          const n = Number(asked[2]);
          if (asked[1] === 'era') return ERA[n]!(message['id'], res);
          if (n === SILENT) return;
          if (n === SHORT)
            return void sse(res, {
              jsonrpc: '2.0',
              method: 'notifications/message',
              params: { level: 'info', data: 'x' },
            });
          return SHAPES[n]!(message['id'], res);
        }
        forwardHttp(fixture.url, req, res, body);
      });
    },
    '/mcp',
  );
  return { url, seen };
}

/** The fixture's tools/list answer (JSON or one SSE event) with {@link SHAPED} added, as JSON. */
function listed(to: URL, req: IncomingMessage, body: Buffer, res: ServerResponse): void {
  const out = request(to, { method: 'POST', headers: { ...req.headers, host: to.host } }, (answer) => {
    const chunks: Buffer[] = [];
    answer.on('data', (c: Buffer) => chunks.push(c));
    answer.on('end', () => {
      const got = Buffer.concat(chunks).toString('utf8');
      const data = String(answer.headers['content-type']).includes('event-stream')
        ? /^data: (.*)$/m.exec(got)![1]!
        : got;
      const message = JSON.parse(data) as { result?: { tools?: unknown[] } };
      message.result?.tools?.push(SHAPED);
      json(res, message, answer.statusCode);
    });
  });
  out.on('error', () => res.destroy());
  out.end(body);
}

async function gateway(fast: boolean, callTimeoutMs: number) {
  const front = await scripted();
  const policy = writePolicy(tempDir('modern-raw-http'), {
    gateway: { upstreams: { mod: { url: front.url.href, connectTimeoutMs: 30_000, callTimeoutMs } }, pin: 'off' },
    rules: [{ name: 'all', result: 'allow' }],
  });
  fastPathFor(cleanups, fast);
  const on = await gatewayOverHttp(cleanups, policy);
  // The modern handler (and whether it has a fast path) is made on the first 2026-07-28 request.
  await call(on.url, 'warm', 0);
  on.records.length = 0;
  return { ...on, seen: front.seen };
}

/** A plain 2026-07-28 `mod:echo` of `text` to the gateway: its status, content type and body as sent. */
async function call(url: URL, said: string, id: number, signal?: AbortSignal, tool = 'echo') {
  const response = await fetch(url, {
    method: 'POST',
    headers: modernCallHeaders(`mod:${tool}`),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: `mod:${tool}`, arguments: { text: said }, _meta: modernMeta() },
    }),
    ...(signal ? { signal } : {}),
  });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

/** The headers of a POST the SDK's transport derives (the ones a raw POST must send alike). */
const HEADERS = [
  'accept',
  'content-type',
  'content-length',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'mcp-session-id',
];

describe('raw POSTs to a 2026-07-28 HTTP upstream (the gateway’s fast path)', { timeout: 120_000 }, () => {
  it('answers a seeded mix of upstream answers byte for byte as the SDK transport does, with the same audit and headers', async () => {
    const seed = Date.now() % 100_000;
    const next = prng(seed);
    const plan = [...SHAPES.keys(), SILENT, ...Array.from({ length: 40 }, () => Math.floor(next() * SHAPES.length))];
    // Each shape to `echo` and to `shaped` (its output schema), the rest of the mix to either.
    plan.push(...SHAPES.keys());
    const tools = plan.map((_, i) =>
      i > SHAPES.length + 40 || (i > SHAPES.length && next() < 0.5) ? 'shaped' : 'echo',
    );
    const runs = [];
    for (const fast of [true, false]) {
      const { url, records, seen } = await gateway(fast, 1_000);
      const answers = [];
      for (const [i, shape] of plan.entries())
        answers.push(await call(url, `shape:${shape}`, i + 1, undefined, tools[i]));
      await new Promise((resolve) => setTimeout(resolve, 100));
      // A Content-Length that is the body's (the raw request's id is longer than the SDK's number).
      const headers = seen.map((s) =>
        HEADERS.map((name) => (name === 'content-length' ? Number(s.headers[name]) === s.length : s.headers[name])),
      );
      runs.push({
        answers: normal(answers) as unknown[],
        audit: auditOf(records),
        headers,
        closed: seen.map((s) => s.closed),
        ids: seen.map((s) => s.body['id']),
        // The request as sent, its id aside (the raw request's is the gateway's own), member order kept.
        bodies: seen.map((s) => JSON.stringify({ ...s.body, id: 0 })),
      });
    }
    const [fast, sdk] = runs as [(typeof runs)[0], (typeof runs)[0]];
    // The fast path sent every call raw (its own ids), the SDK path none; the same bytes but for the id.
    expect(fast.ids.every((id) => typeof id === 'string' && id.startsWith('toolgate-raw:'))).toBe(true);
    expect(sdk.ids.every((id) => typeof id === 'number')).toBe(true);
    expect(fast.bodies, `seed ${seed}`).toEqual(sdk.bodies);
    for (const [i, answer] of fast.answers.entries())
      expect(answer, `seed ${seed}, call ${i} (shape ${plan[i]})`).toEqual(sdk.answers[i]);
    expect(fast.audit, `seed ${seed}`).toEqual(sdk.audit);
    expect(fast.headers, `seed ${seed}`).toEqual(sdk.headers);
    expect(fast.headers[0]).toEqual([
      'application/json, text/event-stream',
      'application/json',
      true,
      '2026-07-28',
      'tools/call',
      'echo',
      undefined,
    ]);
    // The call that never got its answer timed out, and its POST was closed, on both paths.
    expect(fast.closed[SHAPES.length]).toBe(true);
    expect(sdk.closed[SHAPES.length]).toBe(true);
    const all = JSON.stringify(fast.answers);
    for (const expected of [
      'after progress',
      'upstream says no',
      'bad params, with a 400',
      'did not answer within 1000 ms',
      'has an output schema but did not return structured content',
      "does not match the tool's output schema",
      'Invalid result for tools/call',
      '\\"n\\":2',
    ])
      expect(all).toContain(expected);
  });

  it('answers what the era check refuses as the SDK path does, never as a success', async () => {
    const runs: unknown[][] = [];
    for (const fast of [true, false]) {
      const answers = [];
      // One gateway per answer: each is a violation, after which the upstream is reconnected.
      for (const n of ERA.keys()) {
        const { url, seen } = await gateway(fast, 5_000);
        answers.push(await call(url, `era:${n}`, 1));
        expect(typeof seen[0]?.body['id']).toBe(fast ? 'string' : 'number');
      }
      runs.push(normal(answers) as unknown[]);
    }
    expect(runs[0]).toEqual(runs[1]);
    for (const answer of runs[0]!) expect(JSON.stringify(answer)).toContain('isError\\":true');
    expect(JSON.stringify(runs[0])).not.toContain('a 2025 answer');
    expect(JSON.stringify(runs[0])).not.toContain('odd type');
    // A result after the upstream's request in the same stream is not taken (the connection is going down).
    expect(JSON.stringify(runs[0])).not.toContain('after a request');
  });

  it('fails closed, POSTed once, when the answer stream ends without the answer', async () => {
    const { url, seen } = await gateway(true, 30_000);
    const answer = await call(url, `shape:${SHORT}`, 1);
    expect(answer.text).toContain('outcome');
    expect(answer.text).toContain('unknown');
    expect(answer.text).not.toContain('"isError":false');
    expect(seen).toHaveLength(1);
  });

  it('closes the upstream POST when the client goes away mid-call', async () => {
    const { url, seen } = await gateway(true, 30_000);
    const gone = new AbortController();
    const pending = call(url, `shape:${SILENT}`, 1, gone.signal).catch((error: unknown) => error);
    for (let tries = 0; seen.length === 0 && tries < 200; tries++) await new Promise((r) => setTimeout(r, 10));
    gone.abort();
    await pending;
    for (let tries = 0; !seen[0]?.closed && tries < 200; tries++) await new Promise((r) => setTimeout(r, 10));
    expect(seen).toHaveLength(1);
    expect(seen[0]!.closed).toBe(true);
  });
});
