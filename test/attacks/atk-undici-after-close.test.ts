/**
 * Attack (atk-undici): a raw tools/call sent on a RawHttpTransport after close() is still POSTed to the
 * upstream (the tool runs), on a fresh undici Pool made lazily by `#post` that nothing ever destroys. The SDK
 * path refuses the same send (its abort controller is aborted by close(): fetch never sends it).
 */
import { type IncomingMessage, type ServerResponse } from 'node:http';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { rawHttpTransport } from '../../src/gateway/upstream-raw-http.js';
import { cleanupsAfterEach, loopbackServer } from '../harness.js';

const cleanups = cleanupsAfterEach();

describe('atk-undici: a raw POST after the transport closed', () => {
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
    await transport.send(call).then(
      () => undefined,
      () => undefined,
    );
    await new Promise((r) => setTimeout(r, 100));
    cleanups.push(() => transport.close());
    expect(seen).toEqual([]);
  });
});
