/**
 * Attack on hosts.ts's memo (681a8a2): a listener that remembered Host texts decides every spelling of a
 * host as a fresh check does — case, trailing dots, ports, IPv6 and IPv4 spellings, Unicode (IDN, full-width),
 * whitespace, `__proto__`, through a trusted proxy's X-Forwarded-Host, in either order (refused first or
 * allowed first), with the memo filled by 256 texts first and after.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { hostCheck, type HostRules } from '../../src/gateway/hosts.js';

const RULES: HostRules = {
  bound: '127.0.0.1',
  publicUrl: 'https://gw.example.com:8443/mcp',
  allowed: ['api.example.com', 'internal.example.com:9000', '[fd00::1]'],
  trustedProxies: ['10.0.0.1'],
};

const FORMS = [
  'api.example.com',
  'API.EXAMPLE.COM',
  'api.example.com.',
  'api.example.com..',
  'api.exаmple.com', // Cyrillic а
  'аpi.example.com',
  'api.example.com\t',
  ' api.example.com',
  'api.example.com:',
  'api.example.com:00080',
  'internal.example.com:9000',
  'internal.example.com:09000',
  'internal.example.com:9000.',
  'internal.example.com.:9000',
  'internal.example.com',
  'gw.example.com:8443',
  'gw.example.com:443',
  'gw.example.com',
  '127.1',
  '0x7f.0.0.1',
  '2130706433',
  '１２７.0.0.1',
  'localhost.',
  'LocalHost:1',
  '[0:0:0:0:0:0:0:1]',
  '[::ffff:127.0.0.1]',
  '[::1]:8080',
  '::1',
  '[FD00::1]',
  '[fd00:0::1]:5',
  'fd00::1',
  '[fd00::1%25eth0]',
  'xn--api-example',
  '__proto__',
  'constructor',
  'api.example.com, evil.com',
  'evil.com, api.example.com',
];

function request(host: string, origin: string | undefined, from = '127.0.0.1', forwarded?: string): IncomingMessage {
  const headers: Record<string, string> = { host };
  if (origin !== undefined) headers['origin'] = origin;
  if (forwarded !== undefined) headers['x-forwarded-host'] = forwarded;
  return { headers, socket: { remoteAddress: from } } as unknown as IncomingMessage;
}

describe('hosts.ts memo on spellings of a host', () => {
  it('every spelling is decided as a fresh check decides it, in either order and past a full memo', () => {
    const cases: IncomingMessage[] = [];
    for (const form of FORMS) {
      cases.push(request(form, undefined));
      cases.push(request('api.example.com', `https://${form}`));
      cases.push(request('api.example.com', `http://${form}`));
      cases.push(request('evil.com', undefined, '10.0.0.1', form));
      cases.push(request('evil.com', undefined, '::ffff:10.0.0.1', form));
    }
    for (const order of [cases, [...cases].reverse()]) {
      const warm = hostCheck(RULES);
      for (const round of [0, 1, 2]) {
        if (round === 2) for (let i = 0; i < 300; i++) warm.refuse(request(`h${i}.example.com`, undefined));
        for (const req of order)
          expect(warm.refuse(req), JSON.stringify(req.headers)).toBe(hostCheck(RULES).refuse(req));
      }
    }
    // Both answers occur.
    const answers = cases.map((req) => hostCheck(RULES).refuse(req) === null);
    expect(answers).toContain(true);
    expect(answers).toContain(false);
  });
});
