// deploy/Containerfile and deploy/entrypoint.sh: the container file parses (every instruction known, every
// COPY source in the tree, the optional peers at the versions package.json tests with), and the start
// command it would run — its ENTRYPOINT with its ENV — starts a real gateway that answers its probes and
// stops cleanly on SIGTERM. The image's /app is this tree; `node /app/dist/cli/main.js` is run from source.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { jwksIssuer } from '../gateway/fixtures/spawn.js';
import { RECORDING, ROOT, tempDir } from '../harness.js';

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

/** The Containerfile's instructions: comments dropped, continuation lines joined, keywords upper-cased. */
function parseContainerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  for (const line of text.split('\n')) {
    if (pending === '' && /^\s*#/.test(line)) continue;
    if (/^\s*#/.test(line)) continue; // a comment inside a continued instruction
    const joined = pending + line;
    if (/\\\s*$/.test(line)) {
      pending = joined.replace(/\\\s*$/, ' ');
      continue;
    }
    pending = '';
    if (joined.trim() === '') continue;
    const m = /^\s*([A-Za-z]+)\s+(.*)$/s.exec(joined);
    if (!m) throw new Error(`not an instruction: ${joined}`);
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]!.trim() });
  }
  return out;
}

/** ENV's `KEY=value` pairs (values unquoted as the builder does). */
function envOf(args: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g))
    env[m[1]!] = m[2]!.replace(/^"(.*)"$/, '$1');
  return env;
}

const KNOWN = new Set([
  'FROM',
  'WORKDIR',
  'ENV',
  'COPY',
  'RUN',
  'VOLUME',
  'USER',
  'EXPOSE',
  'HEALTHCHECK',
  'STOPSIGNAL',
  'ENTRYPOINT',
  'CMD',
]);

describe('deploy/Containerfile', { timeout: 180_000 }, () => {
  const file = readFileSync(join(ROOT, 'deploy/Containerfile'), 'utf8');
  const instructions = parseContainerfile(file);
  const all = (k: string) => instructions.filter((i) => i.keyword === k);
  const one = (k: string) => {
    const found = all(k);
    expect(found, k).toHaveLength(1);
    return found[0]!.args;
  };

  it('parses: known instructions, sources in the tree, exec-form entrypoint, the peers at the tested versions', () => {
    expect(instructions.map((i) => i.keyword).filter((k) => !KNOWN.has(k))).toEqual([]);
    expect(instructions[0]!.keyword).toBe('FROM');
    expect(one('FROM')).toMatch(/^node:(22|24)-/);
    expect(one('WORKDIR')).toBe('/app');
    for (const copy of all('COPY')) {
      const parts = copy.args.split(/\s+/);
      for (const source of parts.slice(0, -1))
        expect(existsSync(join(ROOT, source)) || source === 'dist', source).toBe(true);
    }
    const entrypoint = JSON.parse(one('ENTRYPOINT')) as string[];
    expect(entrypoint).toEqual(['/app/deploy/entrypoint.sh']);
    expect(all('COPY').some((c) => c.args === 'deploy/entrypoint.sh ./deploy/entrypoint.sh')).toBe(true);
    const env = envOf(
      all('ENV')
        .map((e) => e.args)
        .join(' '),
    );
    expect(one('EXPOSE')).toBe(env['TOOLGATE_PORT']);
    expect(one('HEALTHCHECK')).toContain('/healthz');
    expect(one('USER')).toBe('node');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    const run = all('RUN')
      .map((r) => r.args)
      .join(' ');
    for (const m of run.matchAll(/(@?[a-z0-9][\w./-]*)@(\d[\w.-]*)/g))
      expect(pkg.devDependencies[m[1]!], m[1]).toBe(m[2]);
    expect(run).toContain('@modelcontextprotocol/sdk@');
  });

  it('its start command (ENTRYPOINT with its ENV) serves a gateway that answers /readyz, refuses a foreign Host, stops on SIGTERM', async () => {
    const env = envOf(
      all('ENV')
        .map((e) => e.args)
        .join(' '),
    );
    const dir = tempDir('container');
    const policy = join(dir, 'policy.yaml');
    writeFileSync(join(dir, 'rec.jsonl'), '');
    writeFileSync(
      policy,
      stringify({
        version: 1,
        gateway: {
          upstreams: {
            rec: {
              command: process.execPath,
              args: ['--import', 'tsx', RECORDING],
              env: { RECORD: join(dir, 'rec.jsonl') },
            },
          },
          pin: 'off',
        },
        rules: [{ name: 'rest', result: 'allow' }],
      }),
    );
    // `node` in the image runs dist/cli/main.js; here it runs the same CLI from its source.
    const bin = join(dir, 'bin');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'node'),
      `#!/bin/sh\nfirst="$1"; shift\ncase "$first" in */dist/cli/main.js) exec "${process.execPath}" --import tsx "${join(ROOT, 'src/cli/main.ts')}" "$@";; *) exec "${process.execPath}" "$first" "$@";; esac\n`,
    );
    chmodSync(join(bin, 'node'), 0o755);
    const idp = await jwksIssuer();
    const child = spawn(join(ROOT, 'deploy/entrypoint.sh'), [], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env,
        ...env,
        PATH: `${bin}:${process.env['PATH']}`,
        // What the deployment gives: the mounted policy, a free port (8080 in the image), its identity provider and host.
        TOOLGATE_POLICY: policy,
        TOOLGATE_PORT: '0',
        TOOLGATE_JWKS_URL: idp.jwksUrl,
        TOOLGATE_ALLOWED_HOSTS: 'gw.example',
      },
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    try {
      const url = await new Promise<URL>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`did not listen:\n${stderr}`)), 90_000);
        child.stderr.on('data', () => {
          const m = /listening on (\S+)/.exec(stderr);
          if (m) {
            clearTimeout(timer);
            resolve(new URL(m[1]!));
          }
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}:\n${stderr}`)));
      });
      expect(url.hostname).toBe(env['TOOLGATE_HOST']);
      const port = url.port;
      for (let i = 0; ; i++) {
        const r = await fetch(`http://127.0.0.1:${port}/readyz`);
        if (r.status === 200) break;
        if (i > 200) throw new Error(`never ready: ${await r.text()}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      // A Host not on the list is refused; unauthenticated MCP is a 401 (authentication is on).
      const { request } = await import('node:http');
      const status = (host: string) =>
        new Promise<number>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers: { host } }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          req.end('{}');
        });
      expect(await status('evil.example')).toBe(403);
      expect(await status(`gw.example:${port}`)).toBe(401);
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await idp.close();
    }
  });
});
