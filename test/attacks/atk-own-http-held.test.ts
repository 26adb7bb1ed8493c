/**
 * Attack (atk-http5, 2026-12-06; held): what else was tried against the own HTTP/1.1 client. A session id
 * carrying CR/LF (header injection into the raw POST) is refused before a byte is sent; a flood of 1xx answers
 * before the answer is skipped at little cost and never ends the call early; a burst of concurrent calls leaves at
 * most 256 idle connections, all closed by the idle timeout (the server's `Keep-Alive: timeout=N` honoured).
 */
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../harness.js';
import { headOf, rawCaller, rawTcpUpstream } from '../gateway/fixtures/raw-tcp-upstream.js';

const cleanups = cleanupsAfterEach();

async function upstream(answer: (socket: Socket, id: string) => void) {
  const { url, open, requests } = await rawTcpUpstream(cleanups, (socket, text) =>
    answer(socket, /"id":"([^"]+)"/.exec(text)![1]!),
  );
  const { transport, send } = await rawCaller(cleanups, url);
  return { transport, send, heads: () => requests.map((r) => headOf(r.text)), open };
}

const answerOf = (id: string, extra = ''): string => {
  const body = JSON.stringify({ jsonrpc: '2.0', id, result: { content: [] } });
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${extra}Content-Length: ${body.length}\r\n\r\n${body}`;
};

describe('the own HTTP/1.1 client under attack (held)', () => {
  it('a session id with CR/LF is refused before anything is sent (no header injection)', async () => {
    const { transport, send, heads } = await upstream((socket, id) => socket.write(answerOf(id)));
    (transport as unknown as { _sessionId: string })._sessionId = 'abc\r\nX-Injected: 1';
    expect(await send(1)).toMatch(/Invalid character|header content/i);
    (transport as unknown as { _sessionId: string })._sessionId = 'abc';
    expect(await send(2)).toBe('resolved');
    expect(heads()).toHaveLength(1);
    expect(heads()[0]).not.toMatch(/X-Injected/i);
  });

  it('5 000 interim 1xx answers before the answer: skipped, the call answered, cheaply', async () => {
    const { send } = await upstream((socket, id) => {
      socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n'.repeat(2_500));
      socket.write(answerOf(id));
    });
    const before = process.cpuUsage();
    expect(await send(1)).toBe('resolved');
    const spent = process.cpuUsage(before);
    expect((spent.user + spent.system) / 1000).toBeLessThan(1_000);
  });

  it('300 concurrent calls: at most 256 idle connections kept, all closed at the Keep-Alive timeout', async () => {
    const { send, open } = await upstream((socket, id) =>
      setTimeout(() => socket.write(answerOf(id, 'Keep-Alive: timeout=2\r\n')), 30),
    );
    const results = await Promise.all(Array.from({ length: 300 }, (_, i) => send(i + 1)));
    expect(results.every((r) => r === 'resolved')).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(open.size).toBeLessThanOrEqual(256);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(open.size).toBe(0);
  }, 20_000);
});
