/**
 * Attack (atk-http5, 2026-12-06): atk-raw-post-settled-body.test.ts's fix closes a settled 202's answer at its
 * first body byte. But a chunked body's framing is not body: an upstream answers each raw POST `202 Accepted`,
 * `Transfer-Encoding: chunked`, and then trickles a chunk-size line's extension (`0;aaaa…`, up to 4 KiB) or,
 * after the last chunk, trailer lines (up to 16 KiB), a byte at a time, each byte resetting the 300 s silence
 * timer. No body byte ever comes, the call settled at the head (no call timeout applies any more), so the
 * connection stays busy: one socket held per settled call, for as long as the upstream trickles (hours at a
 * byte per 299 s). Same on main's node:http (its 'data' is body bytes only too); the own client could close a
 * settled 202 at its head instead.
 */
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../harness.js';
import { rawCaller, rawTcpUpstream } from '../gateway/fixtures/raw-tcp-upstream.js';

const cleanups = cleanupsAfterEach();

describe('a settled 202 whose chunked framing trickles on', () => {
  it.each([
    ['a chunk extension', 'HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n0;x=', 'a'],
    ['trailer lines', 'HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n', 'x: y\r\n'],
  ])('%s: does not keep its connection open (no socket held per settled call)', async (_, head, drip) => {
    const { url, open, requests } = await rawTcpUpstream(
      cleanups,
      (socket) => {
        socket.write(head);
        const trickle = setInterval(() => socket.write(drip), 50);
        socket.on('close', () => clearInterval(trickle));
        cleanups.push(() => clearInterval(trickle));
      },
      { framing: 'head' },
    );
    const { send } = await rawCaller(cleanups, url);
    const settled: string[] = [];
    for (let i = 1; i <= 5; i++) settled.push(await send(i));
    await new Promise((r) => setTimeout(r, 500));
    const held = open.size;
    // Every call reached the upstream and settled (resolved: a 202 is the upstream's acceptance).
    expect(requests).toHaveLength(5);
    expect(settled).toEqual(['resolved', 'resolved', 'resolved', 'resolved', 'resolved']);
    // At most one idle keep-alive connection may remain, not one busy socket per settled call.
    expect(held).toBeLessThanOrEqual(1);
  });
});
