// Issue 24: the gateway as a platform team runs it, through real `toolgate gateway` processes on loopback:
// bound on every interface behind a Host allow-list, probes, tenants from token claims, the admin API and
// Prometheus metrics.
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { jwksIssuer, runToExit, spawnGateway, type SpawnedGateway } from './fixtures/spawn.js';
import { PG_URL, Proxy, uniqueName } from '../stores/servers.js';
import {
  cleanupsAfterEach,
  DOCS,
  emptyFile,
  jsonLines,
  RECORDING,
  ROOT,
  stdioUpstream,
  tempDir,
  text,
  writePolicy,
} from '../harness.js';

const MAIN = join(ROOT, 'src/cli/main.ts');
const FLAKY = join(ROOT, 'test/gateway/fixtures/flaky-server.ts');
const LATE = join(ROOT, 'test/gateway/fixtures/late-logger.ts');
const cleanups = cleanupsAfterEach();

function sandbox(extra: Record<string, unknown> = {}, upstream: Record<string, unknown> = {}) {
  const dir = tempDir('deploy');
  const record = emptyFile(dir, 'received.jsonl');
  const audit = join(dir, 'audit.jsonl');
  const write = (more: Record<string, unknown> = extra) =>
    writePolicy(dir, {
      gateway: { upstreams: { rec: { ...stdioUpstream(RECORDING, { RECORD: record }), ...upstream } }, pin: 'off' },
      rules: [{ name: 'rest', result: 'allow' }],
      ...more,
    });
  const policy = write();
  const ran = (name: string) => jsonLines<{ name?: string }>(record).filter((r) => r.name === name).length;
  const records = () => jsonLines(audit);
  return { dir, policy, audit, write, ran, records };
}

/** One HTTP request with the headers given as they are (Host included), to `address`:`port`. */
function raw(
  address: string,
  port: number,
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: unknown },
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = httpRequest(
      {
        host: address,
        port,
        method: options.method ?? (payload ? 'POST' : 'GET'),
        path: options.path ?? '/mcp',
        headers: {
          ...(payload ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : {}),
          ...options.headers,
        },
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};

describe('bind where it is deployed', { timeout: 120_000 }, () => {
  it('bound on 0.0.0.0 and reached at 127.0.0.2: an allowed Host is served, another refused and audited', async () => {
    const box = sandbox();
    const gw = await spawnGateway(box.policy, [
      '--host',
      '0.0.0.0',
      '--no-auth',
      '--stateless',
      '--allowed-host',
      'gw.example',
      '--audit',
      box.audit,
    ]);
    cleanups.push(() => gw.stop());
    expect(gw.stderr()).toMatch(/WARNING: --no-auth on the non-loopback address 0\.0\.0\.0/);
    const port = Number(gw.url.port);
    const ok = await raw('127.0.0.2', port, { headers: { host: `gw.example:${port}` }, body: INITIALIZE });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('toolgate-gateway');
    const evil = await raw('127.0.0.2', port, { headers: { host: `evil.example:${port}` }, body: INITIALIZE });
    expect(evil.status).toBe(403);
    expect(JSON.parse(evil.body).error_description).toContain(`"evil.example:${port}" is not an allowed host`);
    // A loopback name is not on the list of a non-loopback bind, nor is a foreign Origin.
    expect((await raw('127.0.0.2', port, { headers: { host: `127.0.0.2:${port}` }, body: INITIALIZE })).status).toBe(
      403,
    );
    const origin = await raw('127.0.0.2', port, {
      headers: { host: `gw.example:${port}`, origin: 'http://evil.example' },
      body: INITIALIZE,
    });
    expect(origin.status).toBe(403);
    expect(origin.body).toContain('Origin');
    // X-Forwarded-Host from a peer that is not a trusted proxy is not believed.
    const forged = await raw('127.0.0.2', port, {
      headers: { host: `evil.example:${port}`, 'x-forwarded-host': 'gw.example' },
      body: INITIALIZE,
    });
    expect(forged.status).toBe(403);
    const refusals = box.records().filter((r) => r['type'] === 'access');
    expect(refusals.length).toBe(4);
    expect(refusals[0]).toMatchObject({ event: 'refused', path: '/mcp', client: '127.0.0.1' });
    expect(String(refusals[0]!['reason'])).toContain('evil.example');
    expect(box.ran('echo')).toBe(0);
  });

  it('believes X-Forwarded-Host and X-Forwarded-For from a trusted proxy only', async () => {
    const box = sandbox();
    const gw = await spawnGateway(box.policy, [
      '--no-auth',
      '--stateless',
      '--allowed-host',
      'gw.example:443',
      '--trusted-proxy',
      '127.0.0.1',
      '--audit',
      box.audit,
    ]);
    cleanups.push(() => gw.stop());
    const port = Number(gw.url.port);
    const via = (forwarded: string) =>
      raw('127.0.0.1', port, {
        headers: {
          host: `127.0.0.1:${port}`,
          'x-forwarded-host': forwarded,
          'x-forwarded-for': '203.0.113.7, 10.0.0.1',
        },
        body: INITIALIZE,
      });
    expect((await via('gw.example:443')).status).toBe(200);
    const refused = await via('gw.example:8443');
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('X-Forwarded-Host');
    expect(box.records().find((r) => r['type'] === 'access')).toMatchObject({ client: '203.0.113.7' });
  });

  it('refuses a non-loopback bind without authentication unless --no-auth, and one no Host could reach', async () => {
    const box = sandbox();
    const bare = await runToExit(['--policy', box.policy, '--http', '0', '--host', '0.0.0.0']);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain(
      '--host 0.0.0.0 is not a loopback address: serving it without authentication is refused',
    );
    const nobody = await runToExit(['--policy', box.policy, '--http', '0', '--host', '0.0.0.0', '--no-auth']);
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toContain('no Host is allowed: name the hosts clients use (--allowed-host');
    const half = await runToExit(['--policy', box.policy, '--http', '0', '--no-auth', '--tls-cert', box.policy]);
    expect(half.code).toBe(2);
    expect(half.stderr).toContain('--tls-cert and --tls-key go together');
  });
});

describe('TLS from --tls-cert / --tls-key', { timeout: 120_000 }, () => {
  it('serves HTTPS with the given certificate', async () => {
    const box = sandbox();
    const cert = join(box.dir, 'cert.pem');
    const key = join(box.dir, 'key.pem');
    await new Promise<void>((resolve, reject) => {
      const child = spawn(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          key,
          '-out',
          cert,
          '-days',
          '1',
          '-subj',
          '/CN=localhost',
        ],
        { stdio: 'ignore' },
      );
      child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`openssl exited ${code}`))));
    });
    const gw = await spawnGateway(box.policy, ['--no-auth', '--stateless', '--tls-cert', cert, '--tls-key', key]);
    cleanups.push(() => gw.stop());
    expect(gw.url.protocol).toBe('https:');
    const { request } = await import('node:https');
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: Number(gw.url.port),
          path: '/healthz',
          ca: readFileSync(cert),
          servername: 'localhost',
          checkServerIdentity: () => undefined,
        },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString('utf8')));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(answer).toEqual({ status: 200, body: JSON.stringify({ status: 'ok' }) });
  });
});

/** Polls `probe` every 200 ms until it holds (or 60 s pass). */
async function until(probe: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await probe()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('/healthz and /readyz', { timeout: 180_000 }, () => {
  it('/readyz is unready (naming what) while an upstream is down or the counter store unreachable, ready when back', async () => {
    const dir = tempDir('ready');
    const pidFile = join(dir, 'pid');
    const downFile = join(dir, 'down');
    const box = sandbox(
      { limits: [{ name: 'echoes', tools: ['rec:echo'], max: 100, window: '1h' }] },
      {
        args: ['--import', 'tsx', FLAKY],
        env: { RECORD: join(dir, 'rec.jsonl'), PIDFILE: pidFile, DOWNFILE: downFile },
      },
    );
    const pg = new Proxy(5432);
    await pg.restore();
    cleanups.push(() => pg.cut());
    const pgUrl = new URL(PG_URL);
    pgUrl.port = String(pg.port);
    const gw = await spawnGateway(box.policy, ['--no-auth', '--stateless', '--counters-postgres', pgUrl.href]);
    cleanups.push(() => gw.stop());
    const port = Number(gw.url.port);
    const readyz = async () => {
      const r = await raw('127.0.0.1', port, { path: '/readyz', headers: { host: '10.0.0.7:8080' } });
      return {
        status: r.status,
        body: JSON.parse(r.body) as { status: string; checks: Record<string, string>; notReady?: string[] },
      };
    };
    await until(async () => (await readyz()).status === 200, 'the gateway to be ready');
    expect((await readyz()).body).toEqual({
      status: 'ready',
      checks: { policy: 'ok', 'upstream rec': 'ok', 'store counters': 'ok' },
    });
    expect((await raw('127.0.0.1', port, { path: '/healthz' })).status).toBe(200);

    // The upstream killed and kept from starting again: unready, naming it.
    writeFileSync(downFile, '');
    process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
    await until(async () => (await readyz()).status === 503, 'unready after the upstream was killed');
    const down = (await readyz()).body;
    expect(down.status).toBe('not ready');
    expect(down.checks['upstream rec']).not.toBe('ok');
    expect(down.notReady).toEqual([`upstream rec: ${down.checks['upstream rec']}`]);
    expect((await raw('127.0.0.1', port, { path: '/healthz' })).status).toBe(200); // the process still answers
    rmSync(downFile);
    await until(async () => (await readyz()).status === 200, 'ready once the upstream is back');

    // The counter store cut off: unready, naming the store (and nothing about where it is).
    await pg.cut();
    await until(async () => (await readyz()).status === 503, 'unready without the counter store');
    const cut = await readyz();
    expect(cut.body.checks['store counters']).toBe('unreachable');
    expect(JSON.stringify(cut.body)).not.toContain(String(pg.port));
    // A call meanwhile is refused at stage store (fail closed), nothing run, and counted as a store error.
    const received = () => (existsSync(join(dir, 'rec.jsonl')) ? readFileSync(join(dir, 'rec.jsonl'), 'utf8') : '');
    const ranBefore = received();
    const refused = await raw('127.0.0.1', port, {
      headers: { host: `127.0.0.1:${port}` },
      body: {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'rec:echo', arguments: { text: 'no store' } },
      },
    });
    expect(refused.body).toMatch(/"isError":true/);
    expect(refused.body).toMatch(/counter store/);
    expect(received()).toBe(ranBefore);
    const metrics = await raw('127.0.0.1', port, { path: '/metrics', headers: { host: `127.0.0.1:${port}` } });
    type Family = { name: string; metrics: { labels?: Record<string, string>; value?: string }[] };
    const storeErrors = (parsePrometheusTextFormat(metrics.body) as Family[]).find(
      (f) => f.name === 'toolgate_store_errors_total',
    );
    expect(storeErrors?.metrics.map((m) => m.value)).toEqual(['1']);
    await pg.restore();
    await until(async () => (await readyz()).status === 200, 'ready once the counter store is back');
    expect(existsSync(downFile)).toBe(false);
  });
});

describe('/readyz and --state-store', { timeout: 180_000 }, () => {
  it('/readyz names the state store: unready while the PostgreSQL --state-store is unreachable, ready when back', async () => {
    const box = sandbox({});
    const pg = new Proxy(5432);
    await pg.restore();
    cleanups.push(() => pg.cut());
    const pgUrl = new URL(PG_URL);
    pgUrl.port = String(pg.port);
    const gw = await spawnGateway(box.policy, ['--no-auth', '--stateless', '--state-store', pgUrl.href], {
      TOOLGATE_APPROVAL_SECRET: 'the owner-set approval key of the replicas',
    });
    cleanups.push(() => gw.stop());
    const port = Number(gw.url.port);
    const readyz = async () => {
      const r = await raw('127.0.0.1', port, { path: '/readyz' });
      return { status: r.status, body: JSON.parse(r.body) as { checks: Record<string, string> } };
    };
    await until(async () => (await readyz()).status === 200, 'the gateway to be ready');
    expect((await readyz()).body.checks['store state']).toBe('ok');
    await pg.cut();
    await until(async () => (await readyz()).status === 503, 'unready without the state store');
    const cut = await readyz();
    expect(cut.body.checks['store state']).toBe('unreachable');
    expect(JSON.stringify(cut.body)).not.toContain(String(pg.port));
    await pg.restore();
    await until(async () => (await readyz()).status === 200, 'ready once the state store is back');
  });
});

/** An MCP client of `url` with `token`, once the upstream's tools are listed. */
async function mcpClient(url: URL, token: string, tool = 'rec:echo'): Promise<Client> {
  const client = new Client({ name: 'caller', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  cleanups.push(() => client.close());
  for (let tries = 0; !(await client.listTools()).tools.some((t) => t.name === tool); tries++) {
    if (tries > 100) throw new Error(`the upstream did not come up: ${JSON.stringify(await client.listTools())}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return client;
}

describe('many tenants on one gateway', { timeout: 240_000 }, () => {
  it("two tenants' tokens on two stateless replicas each get their own plan's limit on PostgreSQL counters: exactly K each", async () => {
    const idp = await jwksIssuer();
    cleanups.push(() => idp.close());
    const limit = uniqueName('echoes');
    const box = sandbox({
      tenants: { acme: { plan: { echoes: 3 } }, globex: { plan: { echoes: 5 } } },
      scopes: { call: ['rec:echo', 'rec:refund'] },
      limits: [{ name: limit, tools: ['rec:echo'], per: ['tenant'], max: { plan: 'echoes' }, window: '1h' }],
    });
    const flags = ['--jwks-url', idp.jwksUrl, '--jwt-issuer', idp.issuer, '--tenant-claim', 'org_id', '--stateless'];
    const replicas = await Promise.all(
      [0, 1].map(() => spawnGateway(box.policy, [...flags, '--counters-postgres', PG_URL])),
    );
    for (const r of replicas) cleanups.push(() => r.stop());
    const clients = async (tenant: string) =>
      Promise.all(
        replicas.map(async (r: SpawnedGateway) =>
          mcpClient(r.url, await idp.sign({ sub: `${tenant}-user`, aud: r.url.href, org_id: tenant, scope: 'call' })),
        ),
      );
    const [acme, globex] = await Promise.all([clients('acme'), clients('globex')]);
    // M = 2 replicas × N = 6 calls per tenant, all at once.
    const calls = (tenant: string, mine: Client[]) =>
      mine.flatMap((client, m) =>
        Array.from({ length: 6 }, (_, n) =>
          client.callTool({ name: 'rec:echo', arguments: { text: `${tenant}-${m}-${n}` } }),
        ),
      );
    const results = await Promise.all([...calls('acme', acme), ...calls('globex', globex)]);
    const ok = (from: number, to: number) => results.slice(from, to).filter((r) => r.isError !== true).length;
    expect(ok(0, 12)).toBe(3);
    expect(ok(12, 24)).toBe(5);
    const refusal = results.slice(0, 12).find((r) => r.isError === true)!;
    expect(text(refusal)).toContain(`refused by the limit ${JSON.stringify(limit)}`);
    const received = readFileSync(join(box.dir, 'received.jsonl'), 'utf8');
    expect(received.match(/"text":"acme-/g)?.length).toBe(3);
    expect(received.match(/"text":"globex-/g)?.length).toBe(5);
  });

  it('refuses a token naming no tenant, two, or an undeclared one — and an undeclared route agent — audited, nothing run', async () => {
    const idp = await jwksIssuer();
    cleanups.push(() => idp.close());
    const box = sandbox({
      tenants: { acme: {}, globex: {} },
      agents: { support: { tools: ['rec:echo'] } },
      scopes: { call: ['rec:echo', 'rec:refund'] },
    });
    const gw = await spawnGateway(box.policy, [
      '--jwks-url',
      idp.jwksUrl,
      '--tenant-claim',
      'org_id',
      '--stateless',
      '--audit',
      box.audit,
    ]);
    cleanups.push(() => gw.stop());
    const port = Number(gw.url.port);
    const aud = gw.url.href;
    const attempt = async (token: string, path = '/mcp') => {
      const r = await raw('127.0.0.1', port, {
        path,
        headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${token}` },
        body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'rec:echo', arguments: { text: 'x' } } },
      });
      return {
        status: r.status,
        reason: String((JSON.parse(r.body) as { error_description?: string }).error_description),
      };
    };
    expect(await attempt(await idp.sign({ sub: 'u', aud }))).toEqual({
      status: 403,
      reason: 'the token carries no tenant claim "org_id": it names no tenant',
    });
    expect(await attempt(await idp.sign({ sub: 'u', aud, org_id: ['acme', 'globex'] }))).toEqual({
      status: 403,
      reason: `the token's tenant claim "org_id" is a list (["acme","globex"]): one tenant per token, as a string`,
    });
    // A one-element list is a list too (docs/gateway.md), and a key spelled with a JSON escape is the same key.
    expect(await attempt(await idp.sign({ sub: 'u', aud, org_id: ['acme'] }))).toEqual({
      status: 403,
      reason: `the token's tenant claim "org_id" is a list (["acme"]): one tenant per token, as a string`,
    });
    expect(
      await attempt(
        await idp.signRaw(`{"sub":"u","aud":${JSON.stringify(aud)},"org_id":"globex","org\\u005fid":"acme"}`),
      ),
    ).toEqual({
      status: 403,
      reason: `the token's tenant claim "org_id" appears more than once: one tenant per token`,
    });
    expect(
      await attempt(await idp.signRaw(`{"sub":"u","aud":${JSON.stringify(aud)},"org_id":"acme","org_id":"globex"}`)),
    ).toEqual({
      status: 403,
      reason: `the token's tenant claim "org_id" appears more than once: one tenant per token`,
    });
    expect(await attempt(await idp.sign({ sub: 'u', aud, org_id: 'initech' }))).toEqual({
      status: 403,
      reason: `the tenant "initech" (token claim "org_id") is not declared in the policy's tenants: section`,
    });
    const good = await idp.sign({ sub: 'u', aud, org_id: 'acme', scope: 'call' });
    expect(await attempt(good, '/mcp/nobody')).toEqual({
      status: 403,
      reason: `the agent "nobody" is not declared in the policy's agents: section`,
    });
    const refused = box.records().filter((r) => r['type'] === 'access');
    expect(refused.map((r) => r['reason'])).toHaveLength(7);
    expect(refused.every((r) => r['caller'] === 'u' && r['event'] === 'refused')).toBe(true);
    expect(box.ran('echo')).toBe(0);
    // The declared route agent narrows to its tools; the tenant's token gets through.
    const client = await mcpClient(new URL('/mcp/support', gw.url), good);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['rec:echo']);
    expect((await client.callTool({ name: 'rec:echo', arguments: { text: 'hi' } })).isError).not.toBe(true);
    const decided = box.records().filter((r) => r['type'] === 'tool');
    expect(decided.at(-1)).toMatchObject({ decision: { tenant: 'acme', agent: 'support', effect: 'allow' } });
  });
});

describe('the admin API (--admin-scope)', { timeout: 240_000 }, () => {
  it('lists upstreams and pins, accepts a pin, reloads (a broken file keeps the policy), drains; no scope → 403; all audited', async () => {
    const idp = await jwksIssuer();
    cleanups.push(() => idp.close());
    const dir = tempDir('admin');
    const policy = join(dir, 'policy.yaml');
    const audit = join(dir, 'audit.jsonl');
    const write = (version: string, extra: Record<string, unknown> = {}) =>
      writeFileSync(
        policy,
        stringify({
          version: 1,
          gateway: {
            upstreams: {
              docs: { command: process.execPath, args: ['--import', 'tsx', DOCS] },
              rec: {
                command: process.execPath,
                args: ['--import', 'tsx', RECORDING],
                env: { RECORD: join(dir, 'rec.jsonl'), SLOW_MS: '2500' },
              },
            },
            pin: 'refuse',
          },
          scopes: { call: ['docs:echo', 'docs:rug_pull', 'rec:echo', 'rec:slow'] },
          rules: [{ name: `rest-${version}`, result: 'allow' }],
          ...extra,
        }),
      );
    write('one');
    const gw = await spawnGateway(policy, [
      '--jwks-url',
      idp.jwksUrl,
      '--admin-scope',
      'toolgate:admin',
      '--audit',
      audit,
      '--no-watch',
    ]);
    cleanups.push(() => gw.stop());
    const port = Number(gw.url.port);
    const aud = gw.url.href;
    const admin = await idp.sign({ sub: 'ops-alice', aud, scope: 'toolgate:admin' });
    const user = await idp.sign({ sub: 'bob', aud, scope: 'call' });
    const call = (method: string, path: string, token = admin, body?: Record<string, unknown>) =>
      raw('127.0.0.1', port, {
        method,
        path,
        headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${token}` },
        ...(body ? { body } : {}),
      }).then((r) => ({ status: r.status, body: JSON.parse(r.body) as Record<string, unknown> }));
    const records = () =>
      readFileSync(audit, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);

    // No admin scope: refused, audited, nothing done.
    const denied = await call('POST', '/admin/reload', user);
    expect(denied.status).toBe(403);
    expect(denied.body['error_description']).toBe(
      'the admin API needs the scope "toolgate:admin", which the token does not carry',
    );
    expect(records().filter((r) => r['type'] === 'access')).toMatchObject([{ caller: 'bob', path: '/admin/reload' }]);
    expect(
      (await raw('127.0.0.1', port, { path: '/admin/upstreams', headers: { host: `127.0.0.1:${port}` } })).status,
    ).toBe(401);

    const client = await mcpClient(gw.url, user, 'docs:echo');
    await until(
      async () =>
        ((await call('GET', '/admin/upstreams')).body['upstreams'] as { state: string }[]).every(
          (u) => u.state === 'ready',
        ),
      'both upstreams',
    );
    const upstreams = (await call('GET', '/admin/upstreams')).body['upstreams'] as {
      namespace: string;
      tools: string[];
    }[];
    expect(upstreams.map((u) => u.namespace)).toEqual(['docs', 'rec']);
    expect(upstreams[0]!.tools).toContain('docs:echo');

    // A definition drifts: refused until an admin accepts it.
    await client.callTool({ name: 'docs:rug_pull', arguments: {} });
    await until(async () => ((await call('GET', '/admin/pins')).body['drift'] as unknown[]).length > 0, 'the drift');
    const pins = (await call('GET', '/admin/pins')).body as {
      drift: { tool: string; diff: string; sha256: string }[];
      pinned: string[];
    };
    expect(pins.drift.map((d) => d.tool)).toEqual(['docs:echo']);
    expect(pins.drift[0]!.diff).toMatch(/^[-+]/m);
    expect((await client.callTool({ name: 'docs:echo', arguments: { text: 'x' } })).isError).toBe(true);
    expect((await call('POST', '/admin/pins/docs:nothing/accept')).status).toBe(404);
    // The accept names the definition reviewed: none named, or another one, accepts nothing.
    expect((await call('POST', '/admin/pins/docs:echo/accept')).status).toBe(400);
    const stale = await call('POST', '/admin/pins/docs:echo/accept', admin, { sha256: '0'.repeat(64) });
    expect(stale.status).toBe(409);
    expect(String(stale.body['error_description'])).toMatch(/review it again/);
    const reviewed = { sha256: pins.drift[0]!.sha256 };
    expect((await call('POST', '/admin/pins/docs:echo/accept', admin, reviewed)).body).toEqual({
      accepted: ['docs:echo'],
    });
    await until(
      async () => (await client.callTool({ name: 'docs:echo', arguments: { text: 'x' } })).isError !== true,
      'the accepted pin',
    );

    // A reload to a broken file is refused and the policy in force kept; a good one takes effect.
    writeFileSync(policy, 'version: 1\nrules:\n  - { name: broken, result: maybe }\n');
    const broken = await call('POST', '/admin/reload');
    expect(broken.status).toBe(409);
    expect(String(broken.body['error'])).toMatch(/policy\.yaml:3:\d+/);
    expect((await client.callTool({ name: 'rec:echo', arguments: { text: 'still' } })).isError).not.toBe(true);
    write('two');
    const good = await call('POST', '/admin/reload');
    expect(good.status).toBe(200);
    expect((good.body['changes'] as string[]).join('\n')).toContain('rule "rest-two" added');

    // Drain: the running call finishes, a new one is refused, /readyz says so.
    const slow = client.callTool({ name: 'rec:slow', arguments: {} });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const drain = call('POST', '/admin/drain');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const late = await raw('127.0.0.1', port, {
      headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${user}` },
      body: INITIALIZE,
    });
    expect(late.status).toBe(503);
    expect(late.body).toContain('draining');
    expect((await raw('127.0.0.1', port, { path: '/readyz' })).status).toBe(503);
    expect(text(await slow)).toBe('slow done');
    expect(await drain).toEqual({ status: 200, body: { drained: true, finished: 1 } });

    const actions = records().filter((r) => r['type'] === 'admin');
    expect(actions.map((r) => [r['action'], r['ok']])).toEqual([
      ['list-upstreams', true],
      ...actions.slice(1, -8).map((r) => [r['action'], true]),
      ['list-pins', true],
      ['accept-pin', false],
      ['accept-pin', false],
      ['accept-pin', false],
      ['accept-pin', true],
      ['reload', false],
      ['reload', true],
      ['drain', true],
    ]);
    expect(actions.every((r) => r['by'] === 'ops-alice')).toBe(true);
    expect(records().some((r) => r['type'] === 'mode' && r['event'] === 'refused')).toBe(true);
  });
});

describe('GET /metrics', { timeout: 180_000 }, () => {
  it('a Prometheus parser reads the decisions just made, by effect, stage, tenant and tool (undeclared names as "other")', async () => {
    const limit = uniqueName('metered');
    const box = sandbox({
      tenants: { acme: {} },
      limits: [{ name: limit, tools: ['rec:echo'], max: 2, window: '1h' }],
      rules: [
        { name: 'no-refunds', tools: 'rec:refund', result: 'deny', reason: 'no refunds here' },
        { name: 'rest', result: 'allow' },
      ],
    });
    const gw = await spawnGateway(box.policy, ['--no-auth', '--tenant', 'acme', '--no-watch']);
    cleanups.push(() => gw.stop());
    const { Client: McpClient } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new McpClient({ name: 'caller', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(gw.url));
    cleanups.push(() => client.close());
    await until(async () => (await client.listTools()).tools.some((t) => t.name === 'rec:echo'), 'the upstream');
    for (let i = 0; i < 3; i++) await client.callTool({ name: 'rec:echo', arguments: { text: `${i}` } });
    await client.callTool({ name: 'rec:refund', arguments: { order: 'A', amount: 1 } });
    await client.callTool({ name: 'rec:slow', arguments: {} });
    const scrape = await raw('127.0.0.1', Number(gw.url.port), { path: '/metrics', headers: { host: gw.url.host } });
    expect(scrape.status).toBe(200);
    expect(scrape.headers['content-type']).toContain('text/plain');
    type Family = {
      name: string;
      type: string;
      metrics: { labels?: Record<string, string>; value?: string; count?: string }[];
    };
    const families = new Map((parsePrometheusTextFormat(scrape.body) as Family[]).map((f) => [f.name, f]));
    const value = (name: string, labels: Record<string, string>) =>
      Number(
        families.get(name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value ??
          NaN,
      );
    expect(families.get('toolgate_decisions_total')?.type).toBe('COUNTER');
    expect(
      value('toolgate_decisions_total', { effect: 'allow', stage: 'policy', tenant: 'acme', tool: 'rec:echo' }),
    ).toBe(2);
    expect(
      value('toolgate_decisions_total', { effect: 'deny', stage: 'limit', tenant: 'acme', tool: 'rec:echo' }),
    ).toBe(1);
    expect(
      value('toolgate_decisions_total', { effect: 'deny', stage: 'policy', tenant: 'acme', tool: 'rec:refund' }),
    ).toBe(1);
    // rec:slow is named nowhere in the policy: counted, under "other".
    expect(value('toolgate_decisions_total', { effect: 'allow', tool: 'other' })).toBe(1);
    expect(
      families
        .get('toolgate_decisions_total')!
        .metrics.every((m) => ['rec:echo', 'rec:refund', 'other'].includes(m.labels!['tool']!)),
    ).toBe(true);
    expect(value('toolgate_limit_refusals_total', { tenant: 'acme', tool: 'rec:echo' })).toBe(1);
    expect(value('toolgate_upstream_up', { upstream: 'rec', state: 'ready' })).toBe(1);
    const latency = families.get('toolgate_tool_call_duration_seconds')!;
    expect(latency.type).toBe('HISTOGRAM');
    // One series (upstream rec, status ok): the three calls that ran, each within the last bucket.
    const buckets = latency.metrics.map((m) => (m as { buckets?: Record<string, string> }).buckets);
    expect(buckets.map((b) => b?.['+Inf'])).toEqual(['3']);
    expect(scrape.body).toContain('toolgate_tool_call_duration_seconds_count{upstream="rec",status="ok"} 3');
    // A reload refused is counted as such.
    writeFileSync(box.policy, 'version: 1\nrules: [ { name: x, result: maybe } ]\n');
    process.kill(gw.pid, 'SIGHUP');
    await until(async () => {
      const again = await raw('127.0.0.1', Number(gw.url.port), { path: '/metrics', headers: { host: gw.url.host } });
      const f = (parsePrometheusTextFormat(again.body) as Family[]).find((x) => x.name === 'toolgate_reloads_total');
      return f?.metrics.some((m) => m.labels?.['result'] === 'refused' && m.value === '1') === true;
    }, 'the refused reload counted');
  });
});

describe('OTLP export (OTEL_EXPORTER_OTLP_ENDPOINT)', { timeout: 180_000 }, () => {
  it('sends the execute_tool spans and the toolgate.decisions counter to the OTLP/HTTP endpoint', async () => {
    const { createServer } = await import('node:http');
    const received: { path: string; body: string }[] = [];
    const collector = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        received.push({ path: req.url ?? '', body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => collector.close(() => resolve())));
    const endpoint = `http://127.0.0.1:${(collector.address() as { port: number }).port}`;
    const box = sandbox({
      rules: [
        { name: 'no-refunds', tools: 'rec:refund', result: 'deny', reason: 'no' },
        { name: 'rest', result: 'allow' },
      ],
    });
    const gw = await spawnGateway(box.policy, ['--no-auth', '--stateless'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_METRIC_EXPORT_INTERVAL: '500',
    });
    cleanups.push(() => gw.stop());
    const { Client: McpClient } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new McpClient({ name: 'caller', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(gw.url));
    cleanups.push(() => client.close());
    await until(async () => (await client.listTools()).tools.some((t) => t.name === 'rec:echo'), 'the upstream');
    await client.callTool({ name: 'rec:echo', arguments: { text: 'traced' } });
    await client.callTool({ name: 'rec:refund', arguments: { order: 'A', amount: 1 } });
    await until(
      async () => received.some((r) => r.path === '/v1/traces' && r.body.includes('execute_tool rec:refund')),
      'the spans',
    );
    await until(
      async () => received.some((r) => r.path === '/v1/metrics' && r.body.includes('toolgate.decisions')),
      'the counter',
    );
    const spans = received
      .filter((r) => r.path === '/v1/traces')
      .flatMap(
        (r) =>
          (JSON.parse(r.body) as { resourceSpans: { scopeSpans: { spans: { name: string }[] }[] }[] }).resourceSpans,
      )
      .flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => s.name)));
    expect(spans).toEqual(expect.arrayContaining(['execute_tool rec:echo', 'execute_tool rec:refund']));
  });

  it('refuses to start when the endpoint is set and the SDK cannot be loaded', async () => {
    const box = sandbox();
    // A loader hook that makes the OpenTelemetry SDK unresolvable, as on an install without the optional peers.
    const hook = join(box.dir, 'no-otel.mjs');
    writeFileSync(
      hook,
      "export async function resolve(s, c, next) { if (s.startsWith('@opentelemetry/sdk-') || s.startsWith('@opentelemetry/exporter-')) throw new Error(`Cannot find package '${s}'`); return next(s, c); }\n",
    );
    const register = join(box.dir, 'register.mjs');
    writeFileSync(
      register,
      `import { register } from 'node:module';\nregister(${JSON.stringify('file://' + hook)});\n`,
    );
    const child = spawn(
      process.execPath,
      ['--import', register, '--import', 'tsx', MAIN, 'gateway', '--policy', box.policy, '--http', '0', '--no-auth'],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' },
      },
    );
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK could not be loaded');
  });
});

describe('upstreams limited to tenants (gateway.upstreams.<ns>.tenants)', { timeout: 180_000 }, () => {
  it("hides and refuses an upstream's tools, resources and prompts to the other tenants; an undeclared tenant refuses the file", async () => {
    const idp = await jwksIssuer();
    cleanups.push(() => idp.close());
    const dir = tempDir('upstream-tenants');
    const policy = join(dir, 'policy.yaml');
    const write = (tenants: string[]) =>
      writeFileSync(
        policy,
        stringify({
          version: 1,
          gateway: {
            upstreams: {
              docs: { command: process.execPath, args: ['--import', 'tsx', DOCS], tenants },
              rec: {
                command: process.execPath,
                args: ['--import', 'tsx', RECORDING],
                env: { RECORD: join(dir, 'rec.jsonl') },
              },
            },
            pin: 'off',
          },
          tenants: { acme: {}, globex: {} },
          scopes: { call: ['docs:echo', 'rec:echo'] },
          rules: [{ name: 'rest', result: 'allow' }],
          resources: [{ name: 'all', result: 'allow' }],
          prompts: [{ name: 'all', result: 'allow' }],
        }),
      );
    write(['initech']);
    const bad = await runToExit([
      '--policy',
      policy,
      '--http',
      '0',
      '--jwks-url',
      idp.jwksUrl,
      '--tenant-claim',
      'org_id',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('gateway.upstreams.docs.tenants names "initech", which tenants: does not declare');
    write(['globex']);
    const gw = await spawnGateway(policy, [
      '--jwks-url',
      idp.jwksUrl,
      '--tenant-claim',
      'org_id',
      '--audit',
      join(dir, 'audit.jsonl'),
    ]);
    cleanups.push(() => gw.stop());
    const token = (org: string) => idp.sign({ sub: `${org}-user`, aud: gw.url.href, org_id: org, scope: 'call' });
    const globex = await mcpClient(gw.url, await token('globex'), 'docs:echo');
    const acme = await mcpClient(gw.url, await token('acme'), 'rec:echo');
    expect((await acme.listTools()).tools.map((t) => t.name)).toEqual(['rec:echo']);
    expect((await globex.listTools()).tools.map((t) => t.name).sort()).toEqual(['docs:echo', 'rec:echo']);
    const refused = await acme.callTool({ name: 'docs:echo', arguments: { text: 'x' } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toBe('toolgate gateway: upstream "docs" serves the tenants "globex" only, not "acme"');
    expect((await globex.callTool({ name: 'docs:echo', arguments: { text: 'x' } })).isError).not.toBe(true);
    const acmeResources = (await acme.listResources()).resources.map((r) => r.uri);
    expect(acmeResources.length).toBeGreaterThan(0); // rec's
    expect(acmeResources.filter((uri) => uri.startsWith('docs://public/'))).toEqual([]); // docs' own
    expect((await globex.listResources()).resources.map((r) => r.uri)).toContain('docs://public/readme');
    await expect(acme.readResource({ uri: 'docs://public/readme' })).rejects.toThrow(
      /serves the tenants "globex" only/,
    );
    expect((await acme.listPrompts()).prompts.filter((p) => p.name.startsWith('docs:'))).toEqual([]);
    expect((await globex.listPrompts()).prompts.map((p) => p.name)).toContain('docs:summarise');
    await expect(acme.getPrompt({ name: 'docs:summarise', arguments: { topic: 'x' } })).rejects.toThrow(
      /serves the tenants/,
    );
    const audit = readFileSync(join(dir, 'audit.jsonl'), 'utf8');
    expect(audit).toContain('serves the tenants \\"globex\\" only, not \\"acme\\"');
  });

  it("an upstream's log lines of no request reach only the tenants it serves", async () => {
    const idp = await jwksIssuer();
    cleanups.push(() => idp.close());
    const dir = tempDir('upstream-logs');
    const policy = writePolicy(dir, {
      gateway: {
        upstreams: {
          late: { command: process.execPath, args: ['--import', 'tsx', LATE], tenants: ['globex'] },
          rec: { command: process.execPath, args: ['--import', 'tsx', RECORDING], env: { RECORD: join(dir, 'r') } },
        },
        pin: 'off',
      },
      tenants: { acme: {}, globex: {} },
      scopes: { call: ['late:later', 'rec:echo'] },
      rules: [{ name: 'rest', result: 'allow' }],
    });
    const gw = await spawnGateway(policy, ['--jwks-url', idp.jwksUrl, '--tenant-claim', 'org_id']);
    cleanups.push(() => gw.stop());
    const token = (org: string) => idp.sign({ sub: `${org}-user`, aud: gw.url.href, org_id: org, scope: 'call' });
    const globex = await mcpClient(gw.url, await token('globex'), 'late:later');
    const acme = await mcpClient(gw.url, await token('acme'), 'rec:echo');
    const heard: Record<string, unknown[]> = { acme: [], globex: [] };
    globex.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void heard['globex']!.push(n.params.data));
    acme.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void heard['acme']!.push(n.params.data));
    await globex.setLoggingLevel('info');
    await acme.setLoggingLevel('info');
    expect(text(await globex.callTool({ name: 'late:later', arguments: {} }))).toBe('answered');
    for (let tries = 0; heard['globex']!.length === 0; tries++) {
      if (tries > 50) throw new Error(`globex never heard the line:\n${gw.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(heard['globex']).toEqual(['a line of no request']);
    expect(heard['acme']).toEqual([]);
  });
});
