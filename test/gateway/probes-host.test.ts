/**
 * DNS rebinding at the probes of the real `toolgate gateway --http`: `/readyz` names upstreams and store
 * kinds, and it (and `/healthz`) answered under any Host. Now a Host naming no allowed host is refused
 * (403) there as on /mcp; an allowed name, or an IP address with no Origin (an orchestrator probing by
 * address), is answered.
 */
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnGateway } from './fixtures/spawn.js';
import { RECORDING, stdioUpstream, tempDir, writePolicy } from '../harness.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function get(port: number, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, setHost: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the probes under a rebound Host', { timeout: 120_000 }, () => {
  it('/readyz and /healthz refuse a Host naming no allowed host; allowed names and IP addresses are answered', async () => {
    const dir = tempDir('probes');
    const policy = writePolicy(dir, {
      gateway: {
        upstreams: { rec: stdioUpstream(RECORDING, { RECORD: join(dir, 'r') }) },
        pin: 'off',
      },
      rules: [{ name: 'rest', result: 'allow' }],
    });
    const g = await spawnGateway(policy, ['--no-auth', '--stateless']);
    cleanups.push(() => g.stop());
    const port = Number(g.url.port);
    for (const path of ['/readyz', '/healthz']) {
      const rebound = await get(port, path, { host: `attacker.example:${port}` });
      expect(rebound.status, `${path} ${rebound.body}`).toBe(403);
      expect(rebound.body).not.toMatch(/upstream rec/);
      const withOrigin = await get(port, path, { host: `10.0.0.7:${port}`, origin: 'http://attacker.example' });
      expect(withOrigin.status, path).toBe(403);
      expect((await get(port, path, { host: `localhost:${port}` })).status, path).not.toBe(403);
      expect((await get(port, path, { host: `10.0.0.7:${port}` })).status, path).not.toBe(403);
      expect((await get(port, path, { host: `[::1]:${port}` })).status, path).not.toBe(403);
    }
  });
});
