import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { jwtAuthenticator } from '../../src/gateway/auth.js';
import type { GatewayApprovals } from '../../src/gateway/index.js';
import { PostgresStores } from '../../src/stores/postgres.js';
import { PG_URL, uniqueName } from '../stores/servers.js';
import {
  cleanupsAfterEach,
  DOCS,
  forwardHttp,
  gatewayOverHttp,
  stdioUpstream,
  tempDir,
  writePolicy,
} from '../harness.js';
const cleanups = cleanupsAfterEach();

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A small OAuth 2.1 authorization server: metadata, dynamic registration, authorize (auto-approve), PKCE token, JWKS. */
async function authorizationServer() {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, { challenge: string; resource: string | null; clientId: string }>();
  let issuer = '';
  const sign = (claims: Record<string, unknown>, expiresIn: string | number = '5m') =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(issuer)
      .setIssuedAt()
      .setExpirationTime(expiresIn)
      .sign(privateKey);
  issuer = await listen((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', issuer);
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      };
      if (url.pathname === '/.well-known/oauth-authorization-server')
        return json(200, {
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          registration_endpoint: `${issuer}/register`,
          jwks_uri: `${issuer}/jwks`,
          response_types_supported: ['code'],
          grant_types_supported: ['authorization_code'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['none'],
        });
      if (url.pathname === '/jwks') return json(200, { keys: [jwk] });
      if (url.pathname === '/register') {
        const meta = JSON.parse(await body(req)) as Record<string, unknown>;
        return json(201, { ...meta, client_id: randomUUID(), token_endpoint_auth_method: 'none' });
      }
      if (url.pathname === '/authorize') {
        const code = randomUUID();
        codes.set(code, {
          challenge: url.searchParams.get('code_challenge') ?? '',
          resource: url.searchParams.get('resource'),
          clientId: url.searchParams.get('client_id') ?? '',
        });
        const back = new URL(url.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', code);
        if (url.searchParams.get('state')) back.searchParams.set('state', url.searchParams.get('state')!);
        res.writeHead(302, { location: back.href }).end();
        return;
      }
      if (url.pathname === '/token') {
        const form = new URLSearchParams(await body(req));
        const grant = codes.get(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        if (!grant || createHash('sha256').update(verifier).digest('base64url') !== grant.challenge)
          return json(400, { error: 'invalid_grant' });
        codes.delete(form.get('code')!);
        const aud = form.get('resource') ?? grant.resource;
        const token = await sign({ sub: 'alice', scope: 'docs', client_id: grant.clientId, ...(aud ? { aud } : {}) });
        return json(200, { access_token: token, token_type: 'Bearer', expires_in: 300 });
      }
      json(404, { error: 'not_found' });
    })();
  });
  return { issuer, sign };
}

/** An OAuth client provider that follows the authorization redirect itself (the "user" approves). */
function clientProvider(): OAuthClientProvider & { authorizationUrl: URL | null } {
  let info: OAuthClientInformationMixed | undefined;
  let tokens: OAuthTokens | undefined;
  let verifier = '';
  return {
    authorizationUrl: null,
    get redirectUrl() {
      return 'http://127.0.0.1:1/callback';
    },
    get clientMetadata(): OAuthClientMetadata {
      return {
        client_name: 'test',
        redirect_uris: ['http://127.0.0.1:1/callback'],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      };
    },
    clientInformation: () => info,
    saveClientInformation: (i) => void (info = i),
    tokens: () => tokens,
    saveTokens: (t) => void (tokens = t),
    redirectToAuthorization(url) {
      this.authorizationUrl = url;
    },
    saveCodeVerifier: (v) => void (verifier = v),
    codeVerifier: () => verifier,
  };
}

/** Follows the authorization URL (no browser): the code from the redirect. */
async function authorize(url: URL): Promise<string> {
  const response = await fetch(url, { redirect: 'manual' });
  const location = new URL(response.headers.get('location')!);
  return location.searchParams.get('code')!;
}

function policyFile(extra: Record<string, unknown> = {}): string {
  return writePolicy(tempDir('gwhttp'), {
    gateway: { upstreams: { docs: stdioUpstream(DOCS) } },
    scopes: { docs: ['docs:echo', 'docs:rug_pull', 'docs:slow', 'docs:confirm', 'docs:fail'] },
    rules: [{ name: 'docs', namespace: 'docs', result: 'allow' }],
    ...extra,
  });
}

async function gatewayOver(
  file: string,
  issuer: string,
  http: { stateless?: boolean; resource?: string } = {},
  approvals?: GatewayApprovals,
) {
  const {
    gateway,
    http: server,
    records,
  } = await gatewayOverHttp(cleanups, file, {
    gateway: () => (approvals ? { approvals } : {}),
    http: (set) => ({
      authenticate: jwtAuthenticator({ jwksUrl: `${issuer}/jwks`, issuer, algorithms: ['RS256'] }),
      authorizationServers: [issuer],
      scopesSupported: ['docs'],
      context: (auth) => ({ caller: { id: auth.clientId, scopes: set.toolsForScopes(auth.scopes) } }),
      ...http,
      ...(approvals ? { approvals: { store: approvals.store } } : {}),
    }),
  });
  return { gateway, server, records };
}

describe('the gateway as an OAuth 2.1 resource server', { timeout: 120_000 }, () => {
  it('an MCP SDK client that knows only the gateway URL discovers the authorization server and gets in', async () => {
    const as = await authorizationServer();
    const { server } = await gatewayOver(policyFile(), as.issuer);
    const provider = clientProvider();
    const first = new StreamableHTTPClientTransport(server.url, { authProvider: provider });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.authorizationUrl?.origin).toBe(as.issuer);
    expect(provider.authorizationUrl?.searchParams.get('resource')).toBe(server.url.href);
    await first.finishAuth(await authorize(provider.authorizationUrl!));
    const again = new Client({ name: 'test', version: '1.0.0' });
    await again.connect(new StreamableHTTPClientTransport(server.url, { authProvider: provider }));
    cleanups.push(() => again.close());
    const names = (await again.listTools()).tools.map((t) => t.name);
    expect(names).toContain('docs:echo');
    expect(names).not.toContain('docs:summarise_with_llm'); // not in the token's scope
    const echoed = (await again.callTool({ name: 'docs:echo', arguments: { text: 'oauth' } })) as CallToolResult;
    expect(echoed.content).toEqual([{ type: 'text', text: 'echo: oauth' }]);
  });

  it('serves RFC 9728 metadata and answers 401 with resource_metadata to no, expired and wrong-audience tokens', async () => {
    const as = await authorizationServer();
    const { server } = await gatewayOver(policyFile(), as.issuer);
    const metadata = (await (await fetch(server.resourceMetadataUrl)).json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      resource: server.url.href,
      authorization_servers: [as.issuer],
      scopes_supported: ['docs'],
    });
    expect(server.resourceMetadataUrl.pathname).toBe('/.well-known/oauth-protected-resource/mcp');
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const post = (token?: string) =>
      fetch(server.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(init),
      });
    const cases = {
      none: await post(),
      expired: await post(await as.sign({ sub: 'alice', aud: server.url.href }, Math.floor(Date.now() / 1000) - 60)),
      wrongAudience: await post(await as.sign({ sub: 'alice', aud: 'http://127.0.0.1:1/other' })),
      noAudience: await post(await as.sign({ sub: 'alice' })),
      forged: await post((await as.sign({ sub: 'alice', aud: server.url.href })).slice(0, -4) + 'AAAA'),
    };
    for (const [name, response] of Object.entries(cases)) {
      expect(response.status, name).toBe(401);
      expect(response.headers.get('www-authenticate'), name).toContain(
        `resource_metadata="${server.resourceMetadataUrl.href}"`,
      );
    }
    expect(cases.wrongAudience.headers.get('www-authenticate')).toContain('error="invalid_token"');
    const good = await post(await as.sign({ sub: 'alice', aud: server.url.href, scope: 'docs' }));
    expect(good.status).toBe(200);
  });
});

describe('stateless HTTP', { timeout: 120_000 }, () => {
  it('two replicas behind a round-robin front serve one client', async () => {
    const as = await authorizationServer();
    const file = policyFile();
    const backends: URL[] = [];
    const served = [0, 0];
    let next = 0;
    const front = await listen((req, res) => {
      const i = next++ % 2;
      served[i]!++;
      const target = backends[i]!;
      forwardHttp(new URL(target.pathname, target), req, res);
    });
    // Both replicas are the one resource the client knows: the front's URL.
    const a = await gatewayOver(file, as.issuer, { stateless: true, resource: `${front}/mcp` });
    const b = await gatewayOver(file, as.issuer, { stateless: true, resource: `${front}/mcp` });
    backends.push(a.server.url, b.server.url);
    const token = await as.sign({ sub: 'alice', aud: `${front}/mcp`, scope: 'docs' });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${front}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    cleanups.push(() => client.close());
    for (let i = 0; i < 4; i++) {
      const result = (await client.callTool({ name: 'docs:echo', arguments: { text: `n${i}` } })) as CallToolResult;
      expect(result.content).toEqual([{ type: 'text', text: `echo: n${i}` }]);
    }
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('docs:echo');
    expect(served[0]).toBeGreaterThanOrEqual(3);
    expect(served[1]).toBeGreaterThanOrEqual(3);
  });

  it('an approval asked via one replica and answered via the other executes once (PostgreSQL stores)', async () => {
    const as = await authorizationServer();
    const stores = new PostgresStores({ connectionString: PG_URL, schema: uniqueName('gateway') });
    await stores.migrate();
    cleanups.push(async () => {
      await stores.dropSchema();
      await stores.close();
    });
    const approvals: GatewayApprovals = {
      store: stores.approvals,
      nonces: stores.nonces,
      secret: 'a shared secret of the replicas',
    };
    const file = policyFile({
      rules: [{ name: 'echo-asks', tools: 'docs:echo', result: 'ask', reason: 'echo needs a person' }],
    });
    const backends: URL[] = [];
    let next = 0;
    const served: number[] = [];
    const front = await listen((req, res) => {
      const i = next++ % 2;
      served.push(i);
      const target = backends[i]!;
      forwardHttp(new URL(req.url ?? '/', target), req, res);
    });
    const a = await gatewayOver(file, as.issuer, { stateless: true, resource: `${front}/mcp` }, approvals);
    const b = await gatewayOver(file, as.issuer, { stateless: true, resource: `${front}/mcp` }, approvals);
    backends.push(a.server.url, b.server.url);
    const token = await as.sign({ sub: 'alice', aud: `${front}/mcp`, scope: 'docs' });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${front}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    cleanups.push(() => client.close());
    const call = () =>
      client.callTool({ name: 'docs:echo', arguments: { text: 'approved?' } }) as Promise<CallToolResult>;
    const asked = await call();
    expect(asked.isError).toBe(true);
    const id = /request ([0-9a-f]{64})/.exec((asked.content[0] as { text: string }).text)?.[1];
    expect(id).toBeDefined();
    expect((await call()).isError).toBe(true); // still pending: not run, no second request
    expect((await stores.approvals.list({ status: 'pending' })).map((r) => r.id)).toEqual([id]);
    // The person answers on the replica the caller was NOT served by last (the other one).
    const lastServed = served.at(-1)!;
    const other = backends[1 - lastServed]!;
    const answer = (who: string, scope: string) =>
      as.sign({ sub: who, aud: `${front}/mcp`, scope }).then((t) =>
        fetch(new URL(`/approvals/${id}`, other), {
          method: 'POST',
          headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
          body: JSON.stringify({ effect: 'allow' }),
        }),
      );
    expect((await answer('bob', 'docs')).status).toBe(403); // no approver scope
    expect((await answer('alice', 'toolgate:approve')).status).toBe(403); // four eyes
    expect((await answer('bob', 'toolgate:approve')).status).toBe(200);
    expect((await answer('carol', 'toolgate:approve')).status).toBe(409); // first answer wins
    // The approval is bound to the subject (issuer, claim, value): `client_id: alice` is not `sub: alice`.
    const impostor = new Client({ name: 'test', version: '1.0.0' });
    const otherToken = await as.sign({ client_id: 'alice', aud: `${front}/mcp`, scope: 'docs' });
    await impostor.connect(
      new StreamableHTTPClientTransport(new URL(`${front}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${otherToken}` } },
      }),
    );
    cleanups.push(() => impostor.close());
    const stolen = (await impostor.callTool({ name: 'docs:echo', arguments: { text: 'approved?' } })) as CallToolResult;
    expect(stolen.isError).toBe(true);
    const ran = await call();
    expect(ran.content).toEqual([{ type: 'text', text: 'echo: approved?' }]);
    const again = await call(); // the approval is used: asked anew, not run again
    expect(again.isError).toBe(true);
    const executed = [...a.records, ...b.records].filter((r) => r.type === 'tool' && r.status === 'ok');
    expect(executed).toHaveLength(1);
    expect(new Set(served.slice(0, 5)).size).toBe(2);
  });
});
