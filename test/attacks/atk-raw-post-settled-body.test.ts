/**
 * Attack (atk-undici, 2026-12-05; it held on node:http too): an upstream answers each raw POST `202 Accepted`
 * (or a 2xx of an unexpected Content-Type) and then trickles its body forever. The call settles at the head,
 * but the body was read on (`res.resume()`), so the connection stayed busy for good and the keep-alive agent
 * opened a new one for every call: one socket held per settled call, without bound. Fixed: a 202's body byte,
 * or a failed head, closes the response.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { rawHttpTransport } from '../../src/gateway/upstream-raw-http.js';
import { cleanupsAfterEach } from '../harness.js';
import { rawTcpUpstream } from '../gateway/fixtures/raw-tcp-upstream.js';

const cleanups = cleanupsAfterEach();

describe('a settled raw POST whose body never ends', () => {
  it.each([
    ['202 Accepted', 'HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n'],
    ['200 of an unexpected type', 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n'],
  ])('%s: does not keep its connection open (no socket held per call)', async (_, head) => {
    const { url, open, requests } = await rawTcpUpstream(
      cleanups,
      (socket) => {
        socket.write(head);
        const trickle = setInterval(() => socket.write('1\r\n \r\n'), 50);
        cleanups.push(() => clearInterval(trickle));
      },
      { framing: 'head' },
    );
    const transport = rawHttpTransport(url);
    transport.onerror = () => {};
    await transport.start();
    for (let i = 1; i <= 5; i++)
      await transport
        .send({
          jsonrpc: '2.0',
          id: `toolgate-raw:${i}`,
          method: 'tools/call',
          params: { name: 'echo' },
        } as JSONRPCMessage)
        .catch(() => undefined);
    await new Promise((r) => setTimeout(r, 500));
    const held = open.size;
    await transport.close();
    // Every call reached the upstream and settled: at most one idle keep-alive connection may remain, not one
    // busy socket per call.
    expect(requests).toHaveLength(5);
    expect(held).toBeLessThanOrEqual(1);
  });
});
