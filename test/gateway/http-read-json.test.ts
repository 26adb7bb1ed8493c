// The listener's body read (src/gateway/http-wire.ts's readJson, issue 25.3): a body parsed with its head (taken at
// once from the request) and one that comes later, in pieces (read by the request's events), read alike — the
// same JSON, the same parse error, the same 413 over the bound — and a client that leaves mid-body fails the read.
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_MCP_BODY, readJson } from '../../src/gateway/http-wire.js';

let server: Server;
let port = 0;
const failures: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    readJson(req).then(
      (read) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(read)); // framed by its length (one end, no head written before)
      },
      (error: Error) => {
        failures.push(error.message);
        res.destroy();
      },
    );
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((done) => server.close(() => done())));

/** Sends one POST of `body` in `pieces` (the head and the body's first bytes together, then the rest, a write each). */
function post(body: Buffer, pieces: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const head = Buffer.from(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    );
    const got: Buffer[] = [];
    socket.on('data', (chunk) => got.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(got).toString();
      resolve(text.slice(text.indexOf('\r\n\r\n') + 4));
    });
    const size = Math.ceil(body.length / pieces);
    const parts: Buffer[] = [Buffer.concat([head, body.subarray(0, size)])];
    for (let at = size; at < body.length; at += size) parts.push(body.subarray(at, at + size));
    void (async () => {
      for (const part of parts) {
        socket.write(part);
        if (parts.length > 1) await new Promise((r) => setTimeout(r, 5));
      }
    })();
  });
}

describe('readJson', () => {
  it('reads a body that came with its head as one that came in pieces later (JSON, not JSON, empty)', async () => {
    const bodies = [
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":"é"}}}',
      '{"a":',
      '',
      '[1,2,3]',
      '{"\\u0061":1,"b":"\\\\"}',
    ];
    for (const text of bodies) {
      const body = Buffer.from(text);
      const whole = await post(body, 1);
      expect(JSON.parse(whole), text).toEqual(JSON.parse(await post(body, 3)));
      expect(JSON.parse(whole), text).toEqual(
        text === '' || text === '{"a":'
          ? { ok: false, status: 400, error: { code: -32700, message: 'Parse error: the request body is not JSON' } }
          : { ok: true, body: JSON.parse(text) },
      );
    }
  });

  it('a body over the bound is a 413 however it comes; a client that leaves mid-body fails the read', async () => {
    const big = Buffer.from(`"${'x'.repeat(MAX_MCP_BODY)}"`);
    const refused = { ok: false, status: 413, error: { code: -32600, message: expect.stringMatching(/over/) } };
    expect(JSON.parse(await post(big, 1))).toEqual(refused);
    expect(JSON.parse(await post(big, 4))).toEqual(refused);
    const socket = connect(port, '127.0.0.1');
    socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"a":');
    await new Promise((r) => setTimeout(r, 20));
    socket.destroy();
    for (let t = 0; failures.length === 0 && t < 100; t++) await new Promise((r) => setTimeout(r, 10));
    expect(failures).toEqual([expect.stringMatching(/aborted|Premature close/)]);
  });
});
