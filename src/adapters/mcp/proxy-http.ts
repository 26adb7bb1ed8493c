/**
 * The gateway over Streamable HTTP on loopback, behind bearer-token authentication: no token or a bad
 * one is a 401 and nothing reaches the MCP server; a good one's scopes become the caller layer.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JWK, JSONWebKeySet, JWTPayload } from 'jose';
import type { GateContext } from '../../gate/precheck.js';
import { jwtVerifier } from '../../jwt.js';
import { describe } from '../../names.js';
import type { McpProxy } from './proxy.js';

/** Verifies a bearer token; resolves with who it is and their scopes, or rejects. */
export type BearerAuthenticator = (token: string) => Promise<AuthInfo>;

/** Options of {@link jwtAuthenticator}; give exactly one of `publicKey`, `jwk`, `secret`, `jwks`, `jwksUrl`. */
export interface JwtAuthOptions {
  /** A PEM public key (SPKI), for RS*, PS*, ES* and EdDSA tokens. */
  readonly publicKey?: string;
  /** A public JWK. */
  readonly jwk?: JWK;
  /** A shared secret, for HS* tokens. */
  readonly secret?: string | Uint8Array;
  /** A JSON Web Key Set given inline. */
  readonly jwks?: JSONWebKeySet;
  /** The URL of a JSON Web Key Set (fetched and cached by jose). */
  readonly jwksUrl?: string | URL;
  /** The algorithms accepted. @default jose's default for the key (a PEM key needs it: @default ['RS256'] then) */
  readonly algorithms?: readonly string[];
  /** The required `iss`. @default not checked */
  readonly issuer?: string;
  /** The required `aud`. @default not checked */
  readonly audience?: string;
}

/**
 * A bearer authenticator for JWTs, verified with jose (signature, `exp`/`nbf`, and `iss`/`aud` when set).
 * Scopes come from the `scope` claim (space-separated, OAuth) or `scp` (a list); the client id from `sub`
 * (else `client_id`, `azp`). A token with none of the three is refused: it names no one, and sessions are
 * bound to who opened them. `extra.subject` is the issuer, claim and value (`["iss","sub","alice"]` as
 * JSON), so `sub: "alice"` and `client_id: "alice"` (or two issuers' "alice") are different subjects.
 * Scopes are tool names (the "Tool allowlists" spec's caller layer).
 */
export function jwtAuthenticator(options: JwtAuthOptions): BearerAuthenticator {
  const verify = jwtVerifier(options, 'jwtAuthenticator');
  return async (token) => {
    const payload = await verify(token);
    const subject = subjectOf(payload);
    return {
      token,
      clientId: subject.value,
      scopes: scopesOf(payload),
      ...(payload.exp !== undefined ? { expiresAt: payload.exp } : {}),
      extra: {
        claims: payload,
        subject: JSON.stringify([typeof payload.iss === 'string' ? payload.iss : null, subject.claim, subject.value]),
      },
    };
  };
}

function subjectOf(payload: JWTPayload): { claim: string; value: string } {
  for (const claim of ['sub', 'client_id', 'azp']) {
    const value = payload[claim];
    if (typeof value === 'string' && value !== '') return { claim, value };
  }
  throw new Error('the token names no subject (no "sub", "client_id" or "azp" claim)');
}

/**
 * The identity a session is bound to: the authenticator's `extra.subject` when it gives one (the JWT
 * authenticator does: issuer, claim and value), else the client id. An empty one is refused.
 */
export function sessionSubject(auth: AuthInfo): string {
  const given = auth.extra?.['subject'];
  const subject = typeof given === 'string' ? given : JSON.stringify([null, 'clientId', auth.clientId]);
  if (typeof auth.clientId !== 'string' || auth.clientId === '')
    throw new Error('the authenticator gave no client id for the token');
  return subject;
}

function scopesOf(payload: JWTPayload): string[] {
  const scope = payload['scope'];
  if (typeof scope === 'string') return scope.split(/\s+/).filter(Boolean);
  const scp = payload['scp'];
  if (Array.isArray(scp)) return scp.filter((s): s is string => typeof s === 'string');
  if (typeof scp === 'string') return scp.split(/\s+/).filter(Boolean);
  return [];
}

/** Options of {@link serveMcpProxyHttp}. */
export interface McpProxyHttpOptions {
  /** The TCP port; 0 picks a free one. */
  readonly port: number;
  /** The interface to listen on. Anything but loopback is refused unless `allowNonLoopback`. @default '127.0.0.1' */
  readonly host?: string;
  /** Lets `host` be a non-loopback address. @default false */
  readonly allowNonLoopback?: boolean;
  /** Verifies the bearer token of every request. */
  readonly authenticate: BearerAuthenticator;
  /**
   * The gate context of a request from its verified token. It narrows the proxy's own context (agent,
   * tenant and caller layers: each layer it states is intersected with the proxy's), never replaces it.
   * @default caller { id: clientId, scopes }
   */
  readonly context?: (auth: AuthInfo) => GateContext;
  /** The endpoint path. @default '/mcp' */
  readonly path?: string;
}

/** A listening HTTP gateway. */
export interface McpProxyHttpServer {
  readonly url: URL;
  /** Closes the sessions and stops listening (the proxy itself stays open). */
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
const LOOPBACK_HOSTNAMES = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** True for the addresses the gateway listens on without `allowNonLoopback`: 127.0.0.1, ::1, localhost. */
export function isLoopbackAddress(host: string): boolean {
  return LOOPBACK.has(host);
}

/**
 * Serves a gateway over Streamable HTTP with stateful sessions. Each request's token is verified; a
 * session belongs to the subject that opened it, and the caller layer is read from each request's token
 * and narrows the proxy's own context (its agent and tenant layers stay in force).
 */
export async function serveMcpProxyHttp(proxy: McpProxy, options: McpProxyHttpOptions): Promise<McpProxyHttpServer> {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`serveMcpProxyHttp options must be an object, got ${describe(options)}`);
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535)
    throw new TypeError(`option "port" must be an integer from 0 to 65535, got ${describe(options.port)}`);
  if (typeof options.authenticate !== 'function')
    throw new TypeError(`option "authenticate" must be a function, got ${describe(options.authenticate)}`);
  const host = options.host ?? '127.0.0.1';
  if (!LOOPBACK.has(host) && options.allowNonLoopback !== true)
    throw new TypeError(
      `option "host" must be a loopback address (127.0.0.1, ::1, localhost) unless allowNonLoopback is set, got ${describe(host)}`,
    );
  const path = options.path ?? '/mcp';
  const loopbackOnly = LOOPBACK.has(host);
  if (options.context !== undefined && typeof options.context !== 'function')
    throw new TypeError(`option "context" must be a function of the token, got ${describe(options.context)}`);
  // A resolved allowlist cannot be narrowed by a token: refuse to start rather than let the token replace it.
  if (typeof proxy.context === 'object' && proxy.context.allowlist !== undefined)
    throw new TypeError(
      'the proxy context holds a resolved "allowlist", which a token cannot narrow; give agent/tenant/caller layers instead',
    );
  const contextOf =
    options.context ?? ((auth: AuthInfo): GateContext => ({ caller: { id: auth.clientId, scopes: auth.scopes } }));
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; subject: string }>();

  const handle = async (req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse): Promise<void> => {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== path) return reply(res, 404, { error: 'not_found' });
    // DNS rebinding: a page on another origin that resolves its name to 127.0.0.1 must not reach the
    // gateway, so on loopback the Host (and any Origin) must name a loopback host.
    if (
      loopbackOnly &&
      !(isLoopbackHost(req.headers.host) && (req.headers.origin === undefined || isLoopbackOrigin(req.headers.origin)))
    ) {
      return reply(res, 403, {
        error: 'forbidden',
        error_description: 'the Host or Origin header does not name a loopback host',
      });
    }
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match)
      return reply(res, 401, { error: 'invalid_request', error_description: 'a bearer token is required' }, 'Bearer');
    let auth: AuthInfo;
    let subject: string;
    try {
      auth = await options.authenticate(match[1]!);
      subject = sessionSubject(auth);
    } catch {
      return reply(
        res,
        401,
        { error: 'invalid_token', error_description: 'the bearer token could not be verified' },
        'Bearer error="invalid_token"',
      );
    }
    req.auth = auth;
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      if (!session)
        return reply(res, 404, { jsonrpc: '2.0', error: { code: -32001, message: 'session not found' }, id: null });
      if (session.subject !== subject)
        return reply(res, 403, {
          jsonrpc: '2.0',
          error: { code: -32001, message: 'the session belongs to another subject' },
          id: null,
        });
      return session.transport.handleRequest(req, res);
    }
    if (req.method !== 'POST')
      return reply(res, 400, {
        jsonrpc: '2.0',
        error: { code: -32000, message: 'an mcp-session-id header is required' },
        id: null,
      });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, subject });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    // The token's context narrows the proxy's own (never replaces it); no token, no tools.
    const server = proxy.createServer({
      narrow: ({ authInfo }) => (authInfo ? contextOf(authInfo) : { caller: { scopes: [] } }),
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
    if (!transport.sessionId) await server.close(); // not an initialize request: nothing to keep
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        reply(res, 500, {
          error: 'internal_error',
          error_description: error instanceof Error ? error.message : String(error),
        });
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const address = http.address() as AddressInfo;
  const url = new URL(
    `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}${path}`,
  );
  return {
    url,
    async close() {
      await Promise.allSettled([...sessions.values()].map((s) => s.transport.close()));
      sessions.clear();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}

/** @internal True when a Host header names a loopback host (DNS rebinding defence). */
export function isLoopbackHost(header: string | undefined): boolean {
  if (!header) return false;
  try {
    return LOOPBACK_HOSTNAMES.has(new URL(`http://${header}`).hostname);
  } catch {
    return false;
  }
}

/** @internal True when an Origin names a loopback host. */
export function isLoopbackOrigin(origin: string): boolean {
  try {
    return LOOPBACK_HOSTNAMES.has(new URL(origin).hostname);
  } catch {
    return false;
  }
}

/** @internal A JSON reply, with a WWW-Authenticate challenge when given. */
export function reply(res: ServerResponse, status: number, body: unknown, challenge?: string): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  if (challenge) res.setHeader('www-authenticate', challenge);
  res.end(JSON.stringify(body));
}
