/**
 * The gateway's HTTP path as issue 25.3 rebuilt it: the upstream reached through node:http with keep-alive
 * (upstream-fetch.ts) and the 2025-era sessions on our own Node adapter (http-session.ts). A pooled
 * connection carries one request at a time and no MCP state: two sessions and a 2026-07-28 client calling
 * at once each get their own answers, progress still streams before the result, and the adapter sends a
 * POST's headers with its first event — or after 250 ms of none, so a slow call's client sees 200 early.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createGateway, gatewayConfigOf } from '../../src/gateway/index.js';
import { serveGatewayHttp } from '../../src/gateway/http.js';
import { writeResponse } from '../../src/gateway/http-session.js';
import { upstreamFetch } from '../../src/gateway/upstream-fetch.js';
import { loadPolicyFile } from '../../src/policy-file/index.js';
import { httpFixture, LEGACY } from '../mcp/fixtures/processes.js';
import { cleanupsAfterEach, loopbackServer } from '../harness.js';

const cleanups = cleanupsAfterEach();

/** A loopback server running `handle`; its URL. */
const serve = (handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<URL> =>
  loopbackServer(cleanups, handle);

const text = (result: unknown): string => ((result as CallToolResult).content[0] as { text: string }).text;

describe('upstreamFetch: the gateway’s fetch to a Streamable HTTP upstream', () => {
  it('reuses one keep-alive connection, sends the body and headers, streams an SSE answer as it comes', async () => {
    const ports: number[] = [];
    let release: () => void = () => undefined;
    const base = await serve((req, res) => {
      ports.push(req.socket.remotePort!);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/sse') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('event: message\ndata: {"n":1}\n\n');
          release = () => res.end('event: message\ndata: {"n":2}\n\n');
          return;
        }
        if (req.url === '/moved') return void res.writeHead(302, { location: '/elsewhere' }).end();
        if (req.url === '/empty') return void res.writeHead(204).end();
        res.writeHead(200, { 'content-type': 'application/json', 'x-seen': String(req.headers['x-asked']) });
        res.end(JSON.stringify({ got: Buffer.concat(chunks).toString(), method: req.method }));
      });
    });
    const post = () =>
      upstreamFetch(new URL('/json', base), {
        method: 'POST',
        headers: new Headers({ 'content-type': 'application/json', 'x-asked': 'yes' }),
        body: '{"jsonrpc":"2.0"}',
        redirect: 'manual',
      });
    const first = await post();
    expect(first.status).toBe(200);
    expect(first.headers.get('x-seen')).toBe('yes');
    expect(await first.json()).toEqual({ got: '{"jsonrpc":"2.0"}', method: 'POST' });
    await (await post()).json();
    expect(ports[1]).toBe(ports[0]); // the same connection

    const sse = await upstreamFetch(new URL('/sse', base), { method: 'GET', redirect: 'manual' });
    expect(sse.headers.get('content-type')).toBe('text/event-stream');
    const reader = sse.body!.getReader();
    const decoder = new TextDecoder();
    // The first event is read while the upstream still holds the stream open.
    expect(decoder.decode((await reader.read()).value)).toContain('{"n":1}');
    release();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += decoder.decode(r.value);
    expect(rest).toContain('{"n":2}');

    // Redirects are the SDK's to follow (it asks for 'manual'): answered as they came.
    const moved = await upstreamFetch(new URL('/moved', base), { method: 'POST', body: '{}', redirect: 'manual' });
    expect(moved.status).toBe(302);
    expect(moved.headers.get('location')).toBe('/elsewhere');
    // Anything else (a request that follows redirects, as an OAuth flow's) is the global fetch's.
    const followed = await upstreamFetch(new URL('/moved', base), { method: 'POST', body: '{}' });
    expect(followed.status).toBe(200);
    expect(followed.url).toBe(new URL('/elsewhere', base).href);
    const empty = await upstreamFetch(new URL('/empty', base), { method: 'DELETE', redirect: 'manual' });
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
  });

  it('does not send on a pooled connection the server is about to close (its Keep-Alive hint, less 1 s)', async () => {
    const ports: number[] = [];
    const server = createServer((req, res) => {
      ports.push(req.socket.remotePort!);
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    server.keepAliveTimeout = 2_500; // announced as "Keep-Alive: timeout=2"
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const post = async () =>
      (await upstreamFetch(url, { method: 'POST', body: '{}', redirect: 'manual' })).json() as Promise<unknown>;
    await post();
    await post();
    expect(ports[1]).toBe(ports[0]);
    // Idle 1.5 s: past the hint less its 1 s margin, the pooled connection was dropped; a new one serves.
    await new Promise<void>((done) => setTimeout(done, 1_500));
    await expect(post()).resolves.toEqual({});
    expect(ports[2]).not.toBe(ports[0]);
  });

  it('rejects on an aborted signal, before and during the answer, and on a refused connection', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message\ndata: {}\n\n'); // and never ends
    });
    const before = new AbortController();
    before.abort();
    await expect(upstreamFetch(base, { signal: before.signal, redirect: 'manual' })).rejects.toMatchObject({
      name: 'AbortError',
    });
    const during = new AbortController();
    const answer = await upstreamFetch(base, { signal: during.signal, redirect: 'manual' });
    const reader = answer.body!.getReader();
    await reader.read();
    during.abort();
    await expect(reader.read()).rejects.toThrow();
    // A port nothing listens on any more.
    const server = createServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const free = (server.address() as AddressInfo).port;
    await new Promise<void>((done) => server.close(() => done()));
    await expect(
      upstreamFetch(`http://127.0.0.1:${free}/`, { method: 'POST', body: '{}', redirect: 'manual' }),
    ).rejects.toThrow();
  });
});

describe('writeResponse: a web Response on a Node response', () => {
  /** Time to the headers and the body of a request to `url`, ms. */
  const timed = (url: URL, method: string) =>
    new Promise<{ headersMs: number; body: string; bodyMs: number }>((resolve, reject) => {
      const t0 = performance.now();
      const req = request(url, { method }, (res) => {
        const headersMs = performance.now() - t0;
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ headersMs, body, bodyMs: performance.now() - t0 }));
      });
      req.on('error', reject);
      req.end();
    });

  it('holds a POST’s SSE headers for its first event, at most 250 ms; a GET’s go at once; JSON in one piece', async () => {
    const base = await serve((req, res) => {
      const late = req.url === '/late';
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          setTimeout(
            () => {
              controller.enqueue(new TextEncoder().encode('event: message\ndata: {"late":true}\n\n'));
              controller.close();
            },
            late ? 700 : 0,
          );
        },
      });
      const json = req.url === '/json';
      void writeResponse(
        json
          ? new Response('{"jsonrpc":"2.0","id":1,"result":{}}', { headers: { 'content-type': 'application/json' } })
          : new Response(body, { headers: { 'content-type': 'text/event-stream' } }),
        res,
        req.method === 'POST',
      );
    });
    const slow = await timed(new URL('/late', base), 'POST');
    expect(slow.headersMs).toBeLessThan(600); // flushed after 250 ms without an event
    expect(slow.bodyMs).toBeGreaterThanOrEqual(650);
    expect(slow.body).toContain('{"late":true}');
    const stream = await timed(new URL('/late', base), 'GET');
    expect(stream.headersMs).toBeLessThan(200);
    const quick = await timed(new URL('/soon', base), 'POST');
    expect(quick.body).toBe('event: message\ndata: {"late":true}\n\n');
    expect((await timed(new URL('/json', base), 'POST')).body).toBe('{"jsonrpc":"2.0","id":1,"result":{}}');
  });
});

describe('the gateway over HTTP in front of an HTTP upstream', { timeout: 90_000 }, () => {
  it('two sessions and a 2026-07-28 client at once each get their own answers; progress streams before the result', async () => {
    const legacy = await httpFixture(LEGACY);
    cleanups.push(() => legacy.stop());
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-http-path-')));
    const file = join(dir, 'policy.yaml');
    writeFileSync(
      file,
      stringify({
        version: 1,
        gateway: { upstreams: { leg: { url: legacy.url.href } }, pin: 'off' },
        rules: [{ name: 'all', result: 'allow' }],
      }),
    );
    const set = await loadPolicyFile(file);
    const gateway = await createGateway({ policy: set, upstreams: gatewayConfigOf(set).upstreams, pins: null });
    cleanups.push(() => gateway.close());
    const server = await serveGatewayHttp(gateway, { port: 0, authenticate: null });
    cleanups.push(() => server.close());
    const session = async (name: string) => {
      const client = new Client({ name, version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(server.url));
      cleanups.push(() => client.close());
      return client;
    };
    const a = await session('a');
    const b = await session('b');
    const modern = new ModernClient(
      { name: 'm', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await modern.connect(new ModernHttp(server.url));
    cleanups.push(() => modern.close());
    const calls = [];
    for (let i = 0; i < 20; i++) {
      calls.push(a.callTool({ name: 'leg:echo', arguments: { text: `a${i}` } }).then((r) => [text(r), `echo: a${i}`]));
      calls.push(b.callTool({ name: 'leg:echo', arguments: { text: `b${i}` } }).then((r) => [text(r), `echo: b${i}`]));
      calls.push(
        modern.callTool({ name: 'leg:echo', arguments: { text: `m${i}` } }).then((r) => [text(r), `echo: m${i}`]),
      );
    }
    for (const [got, wanted] of await Promise.all(calls)) expect(got).toBe(wanted);
    const progress: number[] = [];
    const done = await a.callTool({ name: 'leg:slow', arguments: {} }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    expect(text(done)).toBe('done');
    expect(progress).toEqual([1, 2, 3]);
  });
});
