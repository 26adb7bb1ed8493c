// The gateway's own client of its raw POSTs to a plain http: upstream (src/gateway/http-own-client.ts, issue
// 25.3): the bytes of a request are node:http's own (random configured headers and URLs), an unasked
// `100 Continue` and a `103 Early Hints` before the answer are skipped (RFC 9110: a client accepts a 1xx it did
// not expect; undici failed the call here), a connection is reused and dropped as node:http's agent does, and a
// connection closed or an answer malformed mid-answer fails the call, never sending it twice.
import { request } from 'node:http';
import type { Socket } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OwnHttpClient } from '../../src/gateway/http-own-client.js';
import { requestTarget } from '../../src/gateway/upstream-raw-http.js';
import { cleanupsAfterEach } from '../harness.js';
import { rawCaller, rawTcpUpstream } from './fixtures/raw-tcp-upstream.js';

const cleanups = cleanupsAfterEach();

const idIn = (text: string): string => /"id":"([^"]+)"/.exec(text)![1]!;

function json(socket: Socket, text: string, extra = ''): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id: idIn(text), result: { content: [] } });
  socket.write(
    `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${extra}Content-Length: ${body.length}\r\n\r\n${body}`,
  );
}

describe('the own HTTP/1.1 client of the raw POSTs', () => {
  it('writes the bytes node:http writes (random headers, URLs with a port, a user, a path)', () => {
    const name = fc
      .string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz-_0123456789'), minLength: 1, maxLength: 10 })
      .filter((n) => !['connection', 'expect', 'te', 'trailer', 'upgrade', 'keep-alive', 'content-length'].includes(n));
    const value = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) });
    fc.assert(
      fc.property(
        fc.dictionary(name, value, { maxKeys: 6 }),
        fc.constantFrom('127.0.0.1', 'localhost', '[::1]', 'upstream.example'),
        fc.constantFrom('', ':80', ':8080', ':1'),
        fc.constantFrom('', 'u@', 'u:p@', 'us%20er:p%C3%A4ss@'),
        fc.constantFrom('/', '/mcp', '/a/b?x=1&y=%20', '/é'),
        fc.boolean(),
        (headers, host, port, user, path, withHost) => {
          const url = new URL(`http://${user}${host}${port}${path}`);
          const target = requestTarget(url);
          const all = { ...headers, ...(withHost ? { host: 'other.example' } : {}), 'content-length': '2' };
          const req = request({ ...target, headers: all });
          req.on('error', () => {});
          req.end('{}');
          const nodeHead = (req as unknown as { _header: string })._header;
          req.destroy();
          const own = new OwnHttpClient(target, 1_000).request(all, Buffer.from('{}')).toString('latin1');
          expect(own).toBe(`${nodeHead}{}`);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('writes the same bytes from a fixed head and added lines as from the whole headers (random headers, bodies)', () => {
    const name = fc
      .string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz-_0123456789'), minLength: 1, maxLength: 10 })
      .filter((n) => !['connection', 'expect', 'te', 'trailer', 'upgrade', 'keep-alive', 'content-length'].includes(n));
    // What node:http lets through: visible ASCII, space, Latin-1 past DEL.
    const value = fc.string({
      unit: fc.integer({ min: 0x20, max: 0xfe }).map((c) => String.fromCharCode(c < 0x7f ? c : c + 1)),
    });
    const added = fc.dictionary(
      fc.constantFrom('mcp-session-id', 'mcp-protocol-version', 'mcp-method', 'mcp-name'),
      value,
      {
        maxKeys: 4,
      },
    );
    fc.assert(
      fc.property(
        fc.dictionary(name, value, { maxKeys: 6 }).map((h) => {
          for (const key of ['mcp-session-id', 'mcp-protocol-version', 'mcp-method', 'mcp-name']) delete h[key];
          return h;
        }),
        added,
        fc.constantFrom('127.0.0.1', 'upstream.example'),
        fc.constantFrom('', ':8080'),
        fc.constantFrom('', 'u:p@'),
        fc.boolean(),
        fc.jsonValue(),
        fc.string({ unit: 'binary' }),
        (fixed, extra, host, port, user, withHost, json, text) => {
          const client = new OwnHttpClient(requestTarget(new URL(`http://${user}${host}${port}/mcp`)), 1_000);
          const configured = { ...fixed, ...(withHost ? { host: 'other.example' } : {}) };
          const body = JSON.stringify({ json, text });
          const length = Buffer.byteLength(body);
          const all = { ...configured, ...extra, 'content-length': String(length) };
          const lines = Object.entries({ ...extra, 'content-length': String(length) })
            .map(([n, v]) => `${n}: ${v}\r\n`)
            .join('');
          const whole = client.request(all, Buffer.from(body));
          const parts = client.requestWith(client.fixedHead(configured), lines, body, length);
          expect(parts.equals(whole)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('skips an unasked 100 Continue and a 103 Early Hints before the answer, in one write or in pieces', async () => {
    const interim = 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n';
    for (const pieces of [false, true]) {
      const { url } = await rawTcpUpstream(cleanups, (socket, text) => {
        if (!pieces) {
          // The 1xx answers and the answer in one write.
          socket.cork();
          socket.write(interim);
          json(socket, text);
          return void socket.uncork();
        }
        socket.write(interim.slice(0, 30));
        setTimeout(() => {
          socket.write(interim.slice(30));
          setTimeout(() => json(socket, text), 5);
        }, 5);
      });
      const { messages, send } = await rawCaller(cleanups, url);
      expect(await send(1), `pieces: ${pieces}`).toBe('resolved');
      expect(messages.map((m) => (m as { id?: unknown }).id)).toEqual(['toolgate-raw:1']);
    }
    const { url, requests } = await rawTcpUpstream(cleanups, (socket, text) => {
      socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n');
      json(socket, text);
    });
    const { messages, send } = await rawCaller(cleanups, url);
    expect(await send(1)).toBe('resolved');
    expect(await send(2)).toBe('resolved');
    expect(messages).toHaveLength(2);
    expect(requests).toHaveLength(2);
  });

  it('keeps one connection for calls in turn; a Connection: close answer or an idle close opens a new one', async () => {
    const { url, requests, connections } = await rawTcpUpstream(cleanups, (socket, text, n) => {
      json(socket, text, n === 3 ? 'Connection: close\r\n' : '');
      if (n === 3) socket.end();
      // After the fifth answer the upstream closes the idle connection.
      if (n === 5) setTimeout(() => socket.end(), 20);
    });
    const { send } = await rawCaller(cleanups, url);
    for (let i = 1; i <= 5; i++) expect(await send(i)).toBe('resolved');
    expect(connections()).toBe(2);
    await new Promise((r) => setTimeout(r, 100));
    expect(await send(6)).toBe('resolved');
    expect(connections()).toBe(3);
    expect(requests.map((r) => r.connection)).toEqual([1, 1, 1, 2, 2, 3]);
  });

  it('a connection closed mid-answer, or an answer not well-formed, fails the call: sent once, never again', async () => {
    const cases: [string, (socket: Socket, text: string) => void, RegExp][] = [
      [
        'closed mid-body',
        (socket) => socket.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"js'),
        /mid-answer/,
      ],
      ['closed before any byte', (socket) => socket.destroy(), /mid-answer|ECONNRESET|socket/],
      [
        'two Content-Lengths',
        (socket) =>
          socket.write(
            'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
          ),
        /Content-Length.*outcome is unknown/,
      ],
      [
        'a folded header',
        (socket) =>
          socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n x\r\nContent-Length: 2\r\n\r\n{}'),
        /folded/,
      ],
      [
        'Transfer-Encoding and Content-Length',
        (socket) =>
          socket.write(
            'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
          ),
        /both Content-Length and Transfer-Encoding/,
      ],
      ['101 never asked', (socket) => socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n'), /101/],
    ];
    for (const [what, answer, error] of cases) {
      let closed = false;
      const { url, requests } = await rawTcpUpstream(cleanups, (socket, text) => {
        socket.on('close', () => (closed = true));
        answer(socket, text);
      });
      const { send } = await rawCaller(cleanups, url);
      expect(await send(1), what).toMatch(error);
      await new Promise((r) => setTimeout(r, 50));
      expect(requests, what).toHaveLength(1);
      expect(closed, what).toBe(true);
    }
  });
});
