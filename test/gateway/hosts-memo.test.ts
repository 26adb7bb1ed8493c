/**
 * hosts.ts remembers what each Host text came to (issue 25: no URL parsed per request): a listener that
 * has seen a text before decides it exactly as one that never has, for allowed, refused and malformed
 * texts, Origins, more texts than it keeps, and texts too long to keep.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { hostCheck, type HostRules } from '../../src/gateway/hosts.js';

const RULES: HostRules = {
  bound: '127.0.0.1',
  publicUrl: 'https://gw.example.com:8443/mcp',
  allowed: ['api.example.com', 'internal.example.com:9000'],
  trustedProxies: [],
};

const PIECES = [
  '127.0.0.1',
  'localhost',
  'LOCALHOST',
  '[::1]',
  'gw.example.com',
  'api.example.com',
  'internal.example.com',
  'evil.example.com',
  'api.example.com.evil',
  '',
  ' ',
  'a/b',
  'user@api.example.com',
  'api.example.com?x',
  '%',
  '[::2]',
];
const PORTS = ['', ':80', ':8443', ':9000', ':0', ':99999', ':x', ':'];

function request(host: string | undefined, origin?: string): IncomingMessage {
  const headers: Record<string, string> = {};
  if (host !== undefined) headers['host'] = host;
  if (origin !== undefined) headers['origin'] = origin;
  return { headers, socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage;
}

/** A pseudo-random generator with a seed (the run is the same every time). */
function random(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

describe('hosts.ts memo', () => {
  it('decides every Host and Origin as a listener that never saw them, past what it keeps', () => {
    const warm = hostCheck(RULES);
    const next = random(25);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
    let refused = 0;
    for (let i = 0; i < 5_000; i++) {
      // A few texts again and again (remembered), and unseen ones (past the 256 kept, and over 255 characters).
      const host =
        next() < 0.1
          ? `h${i}.example.com`
          : next() < 0.02
            ? `${'a'.repeat(300)}.example.com`
            : `${pick(PIECES)}${pick(PORTS)}`;
      const origin = next() < 0.3 ? `https://${pick(PIECES)}${pick(PORTS)}` : undefined;
      const req = request(next() < 0.01 ? undefined : host, origin);
      const answer = warm.refuse(req);
      expect(answer, `${host} ${origin}`).toBe(hostCheck(RULES).refuse(req));
      if (answer !== null) refused++;
    }
    // Both kinds were decided (the test is not all one answer).
    expect(refused).toBeGreaterThan(500);
    expect(refused).toBeLessThan(4_500);
  });
});
