// Attack on the raw 2026-07-28 tools/call over Streamable HTTP (src/gateway/upstream-raw-modern.ts, issue 25.3):
// in that revision a request is cancelled by closing its stream — there is no notifications/cancelled. An
// upstream that keeps an event store answers the call's POST with an SSE stream whose events carry ids and a
// `retry:`, then closes it before the answer (SEP-1699 polling). The SDK path (TOOLGATE_GATEWAY_FAST_PATH=off)
// resumes with a GET naming the Last-Event-ID under the request's signal: once the call is stopped (timed out
// here) it resumes nothing, and a resuming GET already open is closed. The raw route resumed without any
// signal: after the call had failed upstream of the client, the gateway still GET-resumed the stream and held
// that GET open (also when the client went away) — the upstream, whose only cancellation signal is the stream
// closing, saw the request still wanted (the tool kept running after the gateway gave up on it), and every
// such call left a GET open forever.
import { type IncomingMessage, type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
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

const cleanups = cleanupsAfterEach();

interface Resumed {
  lastEventId: string | undefined;
  closed: boolean;
}

/**
 * The 2026-07-28 fixture behind a front that answers `echo` of `resume:<retry>` with one event (an id, a
 * `retry:`) and closes the stream; a GET naming a Last-Event-ID is recorded and held open, never answered.
 */
async function front() {
  const fixture = await httpFixture(MODERN);
  cleanups.push(() => fixture.stop());
  const posts: { id: unknown }[] = [];
  const resumed: Resumed[] = [];
  const url = await loopbackServer(
    cleanups,
    (req: IncomingMessage, res: ServerResponse) => {
      if (req.method === 'GET' && req.headers['last-event-id'] !== undefined) {
        const one: Resumed = { lastEventId: String(req.headers['last-event-id']), closed: false };
        resumed.push(one);
        res.on('close', () => (one.closed = true));
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': held\n\n');
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const message = body.length > 0 ? (JSON.parse(body.toString('utf8')) as Record<string, unknown>) : {};
        const params = message['params'] as { name?: unknown; arguments?: { text?: unknown } } | undefined;
        const asked = /^resume:(\d+)$/.exec(String(params?.arguments?.text));
        if (message['method'] === 'tools/call' && params?.name === 'echo' && asked) {
          posts.push({ id: message['id'] });
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const log = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } };
          res.end(`id: ev-1\nretry: ${asked[1]}\nevent: message\ndata: ${JSON.stringify(log)}\n\n`);
          return;
        }
        forwardHttp(fixture.url, req, res, body);
      });
    },
    '/mcp',
  );
  return { url, posts, resumed };
}

async function gateway(fast: boolean, callTimeoutMs: number) {
  const up = await front();
  const policy = writePolicy(tempDir('modern-raw-resume'), {
    gateway: { upstreams: { mod: { url: up.url.href, connectTimeoutMs: 30_000, callTimeoutMs } }, pin: 'off' },
    rules: [{ name: 'all', result: 'allow' }],
  });
  fastPathFor(cleanups, fast);
  const on = await gatewayOverHttp(cleanups, policy);
  // The modern handler (and whether it has a fast path) is made on the first 2026-07-28 request.
  // The upstream's tools are listed once it is connected: wait for its echo.
  let warm = '';
  for (let tries = 0; !warm.includes('echo: warm') && tries < 100; tries++) {
    warm = await call(on.url, 'warm');
    if (!warm.includes('echo: warm')) await sleep(50);
  }
  expect(warm).toContain('echo: warm');
  return { url: on.url, posts: up.posts, resumed: up.resumed };
}

/** A plain 2026-07-28 `mod:echo` of `text` to the gateway: its body as sent. */
let ids = 0;
async function call(url: URL, said: string, signal?: AbortSignal): Promise<string> {
  const response = await fetch(url, {
    ...(signal ? { signal } : {}),
    method: 'POST',
    headers: modernCallHeaders('mod:echo'),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: ++ids,
      method: 'tools/call',
      params: { name: 'mod:echo', arguments: { text: said }, _meta: modernMeta() },
    }),
  });
  return response.text();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('attack: a raw 2026-07-28 call resumes its stream after it was stopped', { timeout: 60_000 }, () => {
  for (const fast of [true, false]) {
    const path = fast ? 'raw path' : 'SDK path';

    it(`${path}: a call that timed out during the upstream's retry delay resumes nothing`, async () => {
      // The call's timeout (1 s) runs out before the upstream's retry (2.5 s) does.
      const { url, posts, resumed } = await gateway(fast, 1_000);
      const answer = await call(url, 'resume:2500');
      expect(answer).toContain('did not answer within 1000 ms');
      expect(posts).toHaveLength(1);
      expect(typeof posts[0]!.id).toBe(fast ? 'string' : 'number');
      await sleep(2_500);
      expect(resumed, 'a GET resumed the stream of a call that had already failed').toEqual([]);
    });

    it(`${path}: a resuming GET still open when the call times out is closed`, async () => {
      // The upstream's retry (50 ms) comes first: the GET is open, never answered, when the timeout (1 s) runs out.
      const { url, resumed } = await gateway(fast, 1_000);
      const answer = await call(url, 'resume:50');
      expect(answer).toContain('did not answer within 1000 ms');
      expect(resumed).toHaveLength(1);
      expect(resumed[0]!.lastEventId).toBe('ev-1');
      for (let tries = 0; !resumed[0]!.closed && tries < 100; tries++) await sleep(10);
      expect(resumed[0]!.closed, 'the resuming GET of a stopped call was left open').toBe(true);
    });

    it(`${path}: a call its client went away from resumes nothing, and its resuming GET is closed`, async () => {
      // The upstream's retry (50 ms) comes first: the GET is open when the client goes away (timeout 30 s).
      const { url, posts, resumed } = await gateway(fast, 30_000);
      const gone = new AbortController();
      const pending = call(url, 'resume:50', gone.signal).catch((error: unknown) => error);
      for (let tries = 0; resumed.length === 0 && tries < 300; tries++) await sleep(10);
      expect(posts).toHaveLength(1);
      expect(resumed).toHaveLength(1);
      gone.abort();
      await pending;
      for (let tries = 0; !resumed[0]!.closed && tries < 200; tries++) await sleep(10);
      expect(resumed[0]!.closed, 'the resuming GET of a call its client left was left open').toBe(true);
      // Nothing resumed it again.
      await sleep(300);
      expect(resumed).toHaveLength(1);
    });
  }
});
