/**
 * Attack (atk-http5, 2026-12-06; held): response desync on the own client's reused keep-alive connections. A
 * broken upstream sends each answer twice (the copy a few ms later, or in the same write), or answers a call
 * late after the gateway stopped it and sent the next; calls go in turn, each sent as soon as the last settled,
 * so a reused connection may carry the stale bytes into the next exchange. Held: a call resolves only with an
 * answer carrying its own id (a stale copy read as the next call's answer fails that call, outcome unknown —
 * never resolves it with another call's answer), every request reaches the upstream once, and a stopped call's
 * connection is closed (its late answer is never read). The race is real: with the copy 1 ms later, 15 of 30
 * calls failed on http5 (23 on main's node:http) — each a tool that ran, reported outcome unknown — none misread.
 */
import type { Socket } from 'node:net';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../harness.js';
import { rawCaller, rawTcpUpstream, requestIdOf } from '../gateway/fixtures/raw-tcp-upstream.js';

const cleanups = cleanupsAfterEach();

async function upstream(answer: (socket: Socket, id: string | undefined, n: number) => void) {
  const seen: { conn: number; id: string | undefined }[] = [];
  const { url, connections } = await rawTcpUpstream(cleanups, (socket, text, _, conn) => {
    const id = requestIdOf(text);
    seen.push({ conn, id });
    if (id === undefined) socket.write('HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n');
    else answer(socket, id, seen.length);
  });
  return { ...(await rawCaller(cleanups, url)), seen, conns: connections };
}

const answerOf = (id: string): string => {
  const body = JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: id }] } });
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
};

describe('desync on a reused keep-alive connection of the own client', () => {
  it.each([
    ['the same write', 0],
    ['1 ms later', 1],
    ['5 ms later', 5],
  ])(
    'an answer sent twice (the copy %s): no call resolves on another call’s answer, none sent twice',
    async (_, ms) => {
      const { send, seen, messages } = await upstream((socket, id) => {
        if (ms === 0) return void socket.write(answerOf(id!) + answerOf(id!));
        socket.write(answerOf(id!));
        setTimeout(() => socket.write(answerOf(id!)), ms);
      });
      const results: string[] = [];
      for (let i = 1; i <= 30; i++) results.push(await send(i));
      await new Promise((r) => setTimeout(r, 50));
      // Every request reached the upstream once.
      const ids = seen.map((s) => s.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (let i = 1; i <= 30; i++) {
        if (results[i - 1] !== 'resolved') {
          expect(results[i - 1]).toMatch(/outcome is unknown|mid-answer/);
          continue;
        }
        // A resolved call had its own answer handed on.
        expect(messages.some((m) => (m as { id?: unknown }).id === `toolgate-raw:${i}`)).toBe(true);
      }
    },
  );

  it('a call stopped while its answer is late: its connection is closed, the late answer never read', async () => {
    const { transport, send, seen, messages, conns } = await upstream((socket, id, n) => {
      if (n === 1) setTimeout(() => socket.write(answerOf(id!)), 80);
      else socket.write(answerOf(id!));
    });
    const first = send(1);
    await new Promise((r) => setTimeout(r, 20));
    await transport.send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'toolgate-raw:1' },
    } as JSONRPCMessage);
    expect(await first).toBe('resolved'); // stopped quietly: the gateway failed the call itself
    expect(await send(2)).toBe('resolved');
    await new Promise((r) => setTimeout(r, 150));
    expect(await send(3)).toBe('resolved');
    expect(messages.map((m) => (m as { id?: unknown }).id)).toEqual(['toolgate-raw:2', 'toolgate-raw:3']);
    expect(seen.filter((s) => s.id?.startsWith('toolgate-raw:')).map((s) => s.id)).toEqual([
      'toolgate-raw:1',
      'toolgate-raw:2',
      'toolgate-raw:3',
    ]);
    expect(conns()).toBeGreaterThanOrEqual(2);
  });
});
