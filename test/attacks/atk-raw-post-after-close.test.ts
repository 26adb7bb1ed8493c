/**
 * Attack (atk-undici, 2026-12-05; it held on node:http too): a raw tools/call sent on a RawHttpTransport after
 * close() was still POSTed to the upstream (the tool ran) — the SDK path refuses the same send (close() aborts
 * its fetch). Fixed: a raw POST after close is refused and never sent.
 */
import { type IncomingMessage, type ServerResponse } from 'node:http';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { rawHttpTransport } from '../../src/gateway/upstream-raw-http.js';
import { cleanupsAfterEach, loopbackServer } from '../harness.js';

const cleanups = cleanupsAfterEach();

describe('a raw POST after the transport closed', () => {
  it('never reaches the upstream (the tool does not run after close)', async () => {
    const seen: unknown[] = [];
    const url = await loopbackServer(
      cleanups,
      (req: IncomingMessage, res: ServerResponse) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string };
          seen.push(body);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { content: [] } }));
        });
      },
      '/mcp',
    );
    const transport = rawHttpTransport(url);
    transport.onerror = () => {};
    await transport.start();
    await transport.close();
    const call = {
      jsonrpc: '2.0',
      id: 'toolgate-raw:9',
      method: 'tools/call',
      params: { name: 'delete_everything' },
    } as JSONRPCMessage;
    await expect(transport.send(call)).rejects.toThrow(/closed/);
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([]);
  });
});
