/**
 * The gateway over Streamable HTTP, as an OAuth 2.1 resource server per the MCP authorization spec:
 * Protected Resource Metadata (RFC 9728) at `/.well-known/oauth-protected-resource` (and its path-suffixed
 * form), a `WWW-Authenticate: Bearer resource_metadata="…"` challenge on every 401, and the token's
 * audience checked against this resource by default (RFC 8707: a token minted for another server is not
 * accepted here). Sessions (the 2025-03-26/06-18 protocol) are bound to the subject that opened them;
 * `stateless: true` serves every request on a fresh server, so any replica can serve any request.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { McpHttpHandler } from '@modelcontextprotocol/server';
import {
  audienceMatches,
  BearerRefusal,
  isLoopbackAddress,
  reply,
  sessionSubject,
  type BearerAuthenticator,
} from './auth.js';
import { narrowContext } from './context.js';
import type { GateContext } from '../contracts/gate.js';
import { MODERN_VERSION } from '../mcp/index.js';
import { describe } from '../names.js';
import { answerApproval, type ApprovalsEndpoint } from './answers.js';
import type { Gateway, GatewayRequestContext } from './gateway.js';
import type { GatewayAuditSink } from './audit.js';
import { hostCheck } from './hosts.js';
import { httpFastPath, plainLegacyPost, type HttpFastPath } from './http-fast.js';
import { NodeStreamableHttp } from './http-session.js';
import { serveModernFast } from './modern-fast.js';
import {
  answerMetadata,
  answerMetrics,
  listenerOf,
  answerProbe,
  Drain,
  isLegacyPost,
  LEGACY_VERSIONS,
  probedByAddress,
  readJson,
  serveModern,
  type Readiness,
} from './http-wire.js';

/** Options of {@link serveGatewayHttp}. */
export interface GatewayHttpOptions {
  /** The TCP port; 0 picks a free one. */
  readonly port: number;
  /** The interface to listen on; anything but loopback needs `allowNonLoopback`. @default '127.0.0.1' */
  readonly host?: string;
  /**
   * Lets `host` be a non-loopback address (`0.0.0.0` in a container, behind a proxy, or with `tls`); with
   * `authenticate: null` too, that serves anyone who can reach the address. @default false
   */
  readonly allowNonLoopback?: boolean;
  /**
   * The hosts a request's `Host` (and `Origin`) may name, besides the public URL's (`resource`, else the
   * listening URL unless it is a wildcard address) and, on loopback, the loopback names: `name` (any port)
   * or `name:port`. Any other host is refused (403, DNS rebinding). @default none
   */
  readonly allowedHosts?: readonly string[];
  /** Proxies (by peer address) whose `X-Forwarded-Host` / `X-Forwarded-For` are believed. @default none */
  readonly trustedProxies?: readonly string[];
  /** Serve HTTPS with this certificate and key (PEM). @default plain HTTP */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /** Where refusals before any decision (host, tenant, admin scope) are recorded (`access` records). @default none */
  readonly audit?: GatewayAuditSink;
  /**
   * Serve `/mcp/<agent>` as well as `/mcp`: the route's agent is given to `context`. @default false
   */
  readonly routeAgents?: boolean;
  /** Unauthenticated probes: `GET /healthz` (always 200 while the process answers) and `GET /readyz` (this). */
  readonly readiness?: Readiness;
  /** `GET /metrics`: the body and its content type (Prometheus text). @default not served */
  readonly metrics?: () => Promise<{ readonly contentType: string; readonly body: string }>;
  /** The admin API under `/admin/` (see admin.ts). @default not served */
  readonly admin?: AdminEndpoint;
  /** The MCP endpoint path. @default '/mcp' */
  readonly path?: string;
  /**
   * Verifies the bearer token of every request (e.g. `jwtAuthenticator({ jwksUrl, issuer })`); `null`
   * serves without authentication, allowed on a loopback address only (local use, the conformance suite).
   */
  readonly authenticate: BearerAuthenticator | null;
  /**
   * This resource's identifier, the URL clients connect to (the `resource` of the metadata and the
   * audience tokens must carry). @default the listening URL
   */
  readonly resource?: string;
  /** The authorization servers clients get tokens from (the metadata's `authorization_servers`). @default [] */
  readonly authorizationServers?: readonly string[];
  /**
   * The scopes the metadata lists, or a function read per metadata request (the CLI: the scope map of the
   * policy in force, so a reload changes them). @default none listed
   */
  readonly scopesSupported?: readonly string[] | (() => readonly string[]);
  /** The audience a token must name (`aud`, or the authenticator's `resource`): `true` this resource, a string
   * that audience, `false` not checked (not recommended). @default true */
  readonly audience?: boolean | string;
  /** Serve every request on a fresh server with no session (any replica serves any request). @default false */
  readonly stateless?: boolean;
  /**
   * A request's context from its token (and, with `routeAgents`, the agent its route names); it narrows the
   * gateway's own context. A throw refuses the request (403 naming why, an `access` audit record): an
   * unknown tenant, say. @default caller { id, scopes }
   */
  readonly context?: (auth: AuthInfo, route: { readonly agent?: string }) => GateContext;
  /**
   * Serve `GET /approvals` (pending requests) and `POST /approvals/<id>` (`{ "effect": "allow" | "deny",
   * "reason"? }`) over the approval store, for tokens carrying `approverScope`: the gateway's own requests
   * only (source `gateway`), and of those only what THE approver check lets the token see (the policy's
   * `approvals:` lists, four eyes, the gateway's tenant: `approvers`, read per request). The caller of a
   * request cannot answer it. @default not served
   */
  readonly approvals?: ApprovalsEndpoint;
}

/** A listening gateway endpoint. */
export interface GatewayHttpServer {
  readonly url: URL;
  /** Where the Protected Resource Metadata is served. */
  readonly resourceMetadataUrl: URL;
  /** Closes the sessions and stops listening (the gateway itself stays open). */
  close(): Promise<void>;
  /**
   * Stops taking new MCP requests (503, `/readyz` unready) and resolves once the requests already running
   * have finished.
   */
  drain(): Promise<void>;
}

/** @internal What the admin API gets: the request, who is asking (authenticated), and the listener's controls. */
export interface AdminEndpoint {
  /** The scope a token needs; a token without it is refused (403) and the refusal audited. */
  readonly scope: string;
  handle(
    req: IncomingMessage,
    res: ServerResponse,
    pathname: string,
    who: string,
    control: { drain(): Promise<void>; readonly inflight: number; readonly draining: boolean },
  ): Promise<void>;
}

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/**
 * What {@link serveGatewayHttp} serves: a {@link Gateway}, or anything that makes its servers (a proxy,
 * `toolgate/mcp`), with the context a token narrows (fixed, or a function of the request).
 */
export interface GatewayEndpoint {
  readonly context: GatewayRequestContext;
  createServer(options?: { readonly context?: GatewayRequestContext }): ReturnType<Gateway['createServer']>;
  /** The 2026-07-28 handler; without it, 2026-07-28 requests are refused (-32022 naming the versions served). */
  modernHandler?(options?: Parameters<Gateway['modernHandler']>[0]): McpHttpHandler;
}

/**
 * Serves a gateway over Streamable HTTP behind bearer-token authentication.
 *
 * @example
 * const http = await serveGatewayHttp(gateway, {
 *   port: 8080,
 *   authenticate: jwtAuthenticator({ jwksUrl: 'http://127.0.0.1:9000/jwks', issuer: 'http://127.0.0.1:9000' }),
 *   authorizationServers: ['http://127.0.0.1:9000'],
 * });
 */
/** A JSON-RPC error answer with no request id (the request could not be read or is refused before it is). */
function rpcError(res: ServerResponse, status: number, error: { code: number; message: string; data?: unknown }): void {
  reply(res, status, { jsonrpc: '2.0', error, id: null });
}

export async function serveGatewayHttp(
  gateway: GatewayEndpoint,
  options: GatewayHttpOptions,
): Promise<GatewayHttpServer> {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`serveGatewayHttp options must be an object, got ${describe(options)}`);
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535)
    throw new TypeError(`option "port" must be an integer from 0 to 65535, got ${describe(options.port)}`);
  const host = options.host ?? '127.0.0.1';
  if (options.authenticate !== null && typeof options.authenticate !== 'function')
    throw new TypeError(`option "authenticate" must be a function or null, got ${describe(options.authenticate)}`);
  if (options.authenticate === null && !isLoopbackAddress(host) && options.allowNonLoopback !== true)
    throw new TypeError('option "authenticate" may be null (no authentication) on a loopback address only');
  const authenticate = options.authenticate;
  if (options.tls !== undefined && (typeof options.tls !== 'object' || !options.tls?.cert || !options.tls?.key))
    throw new TypeError(`option "tls" must be { cert, key } (PEM), got ${describe(options.tls)}`);
  if (options.admin !== undefined && authenticate === null)
    throw new TypeError('the admin API needs authentication (an admin scope on a verified token)');
  const audit = options.audit ?? (() => undefined);
  if (!isLoopbackAddress(host) && options.allowNonLoopback !== true)
    throw new TypeError(
      `option "host" must be a loopback address (127.0.0.1, ::1, localhost) unless allowNonLoopback is set, got ${describe(host)}`,
    );
  const audienceOption = options.audience ?? true;
  if (typeof audienceOption !== 'boolean' && (typeof audienceOption !== 'string' || audienceOption === ''))
    throw new TypeError(`option "audience" must be a boolean or a non-empty string, got ${describe(audienceOption)}`);
  const path = options.path ?? '/mcp';
  const routeAgents = options.routeAgents === true;
  // Whether the MCP path is its own pathname as a URL parses it (no dot segments, nothing escaped).
  const plainPath = new URL(path, 'http://localhost').pathname === path;
  let hosts: ReturnType<typeof hostCheck> | undefined; // known once listening
  const drainer = new Drain();
  const refusedAccess = (req: IncomingMessage, pathname: string, reason: string, caller: string | null): void =>
    audit({
      type: 'access',
      time: new Date().toISOString(),
      event: 'refused',
      caller,
      path: pathname,
      client: hosts?.clientAddress(req) ?? null,
      reason,
    });
  const contextOf =
    options.context ??
    ((auth: AuthInfo, _route: { readonly agent?: string }): GateContext => ({
      caller: { id: auth.clientId, scopes: auth.scopes },
    }));
  const sessions = new Map<
    string,
    { transport: NodeStreamableHttp; subject: string; route: string; fast: HttpFastPath | undefined }
  >();

  // Known once listening.
  let resource = '';
  let metadataUrl = '';
  const challenge = (error?: { code: string; description: string }): string =>
    `Bearer resource_metadata="${metadataUrl}"${error ? `, error="${error.code}", error_description="${error.description.replace(/["\\]/g, "'")}"` : ''}`;
  // Audited as an access refusal (nothing was decided; a 2026-07-28 `server/discover` without a token too).
  const unauthorized = (
    at: { readonly req: IncomingMessage; readonly pathname: string },
    res: ServerResponse,
    code: string,
    description: string,
  ): void => {
    refusedAccess(at.req, at.pathname, `401 ${code}: ${description}`, null);
    reply(
      res,
      401,
      { error: code, error_description: description },
      challenge(code === 'invalid_request' ? undefined : { code, description }),
    );
  };

  const base = gateway.context;
  // A resolved allowlist cannot be narrowed by a token: refuse to start rather than let a token replace it.
  if (authenticate !== null && typeof base === 'object' && base !== null && base.allowlist !== undefined)
    throw new TypeError(
      'the gateway context holds a resolved "allowlist", which a token cannot narrow; give agent/tenant/caller layers instead',
    );
  // The token's context narrows the gateway's own (never replaces it), read per request: a reload that
  // narrows the gateway's agent or tenant applies to the sessions already open.
  const server = (auth: AuthInfo | undefined, route: { readonly agent?: string }) =>
    gateway.createServer(
      auth === undefined
        ? {}
        : {
            context: (request) => {
              const own = gateway.context;
              return narrowContext(
                typeof own === 'function' ? own(request) : own,
                contextOf(request.authInfo ?? auth, route),
              );
            },
          },
    );

  // One listener, both eras: a 2026-07-28 request (its `_meta` claims a modern version) is served
  // statelessly by the modern handler; everything else as before (sessions, or --stateless).
  // One modern handler per route (the agent the path names, or none).
  const moderns = new Map<string, McpHttpHandler | null>();
  const modernOf = (route: { readonly agent?: string }): McpHttpHandler | null => {
    const key = route.agent ?? '';
    if (!moderns.has(key))
      moderns.set(
        key,
        gateway.modernHandler?.(
          authenticate === null
            ? {}
            : {
                resourceMetadata: () => metadataUrl || undefined,
                context: (request) => {
                  const own = gateway.context;
                  const mine = typeof own === 'function' ? own(request) : own;
                  return request.authInfo === undefined
                    ? mine
                    : narrowContext(mine, contextOf(request.authInfo, route));
                },
              },
        ) ?? null,
      );
    return moderns.get(key)!;
  };

  const handle = async (req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse): Promise<void> => {
    // The MCP path as it is (the common case) is its own pathname; anything else is parsed as a URL.
    const pathname = req.url === path && plainPath ? path : new URL(req.url ?? '/', 'http://localhost').pathname;
    // The probes: unauthenticated, carrying nothing but states.
    const probe = pathname === '/healthz' || pathname === '/readyz';
    // DNS rebinding: the Host (and any Origin) must name an allowed host — the probes' too (/readyz names
    // upstreams and stores), except a Host that is an IP address with no Origin: an orchestrator probes
    // by address (Kubernetes sends the pod's IP), and a rebound name is never an address.
    const badHost = probe && probedByAddress(req) ? null : hosts!.refuse(req);
    if (badHost !== null) {
      refusedAccess(req, pathname, badHost, null);
      return reply(res, 403, { error: 'forbidden', error_description: badHost });
    }
    if (probe) return answerProbe(req, res, pathname, options.readiness, drainer.draining);
    if (pathname === '/metrics' && options.metrics) return answerMetrics(req, res, options.metrics);
    if (authenticate !== null && (pathname === WELL_KNOWN || pathname === `${WELL_KNOWN}${path}`)) {
      return answerMetadata(req, res, {
        resource,
        authorizationServers: options.authorizationServers ?? [],
        scopes: options.scopesSupported,
      });
    }
    const administering = options.admin !== undefined && (pathname === '/admin' || pathname.startsWith('/admin/'));
    let route: { agent?: string } = {};
    if (routeAgents && pathname.startsWith(`${path}/`)) {
      const agent = decodeURIComponent(pathname.slice(path.length + 1));
      if (agent === '' || agent.includes('/')) return reply(res, 404, { error: 'not_found' });
      route = { agent };
    }
    const mcpPath = pathname === path || route.agent !== undefined;
    const answering =
      options.approvals !== undefined && (pathname === '/approvals' || pathname.startsWith('/approvals/'));
    if (!mcpPath && !answering && !administering) return reply(res, 404, { error: 'not_found' });
    let auth: AuthInfo | undefined;
    let subject = 'anonymous';
    if (authenticate !== null) {
      const header = req.headers.authorization;
      const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
      if (!match) return unauthorized({ req, pathname }, res, 'invalid_request', 'a bearer token is required');
      try {
        auth = await authenticate(match[1]!);
        subject = sessionSubject(auth);
      } catch (error) {
        return unauthorized(
          { req, pathname },
          res,
          'invalid_token',
          error instanceof BearerRefusal
            ? error.message
            : 'the bearer token could not be verified (expired, malformed or badly signed)',
        );
      }
      if (auth.expiresAt !== undefined && auth.expiresAt * 1000 <= Date.now())
        return unauthorized({ req, pathname }, res, 'invalid_token', 'the bearer token has expired');
      if (!audienceMatches(auth, audienceOption, resource))
        return unauthorized(
          { req, pathname },
          res,
          'invalid_token',
          'the bearer token was not issued for this resource (audience)',
        );
      req.auth = auth;
    }
    if (administering) {
      const admin = options.admin!;
      if (!auth || !auth.scopes.includes(admin.scope)) {
        const reason = `the admin API needs the scope ${JSON.stringify(admin.scope)}, which the token does not carry`;
        refusedAccess(req, pathname, reason, auth?.clientId ?? null);
        return reply(res, 403, { error: 'insufficient_scope', error_description: reason });
      }
      return admin.handle(req, res, pathname, auth.clientId, drainer);
    }
    if (answering) {
      if (!auth)
        return reply(res, 403, { error: 'forbidden', error_description: 'answering approvals needs authentication' });
      return answerApproval(req, res, pathname, auth, options.approvals!);
    }
    if (drainer.draining) {
      res.setHeader('retry-after', '5');
      return rpcError(res, 503, {
        code: -32000,
        message: 'toolgate gateway: draining, no new calls are taken; retry on another replica',
      });
    }
    // Who the token is for (tenant, agent): refused here, before anything is decided, when it names none.
    if (auth !== undefined && options.context !== undefined) {
      try {
        options.context(auth, route);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        refusedAccess(req, pathname, reason, auth.clientId);
        return reply(res, 403, { error: 'forbidden', error_description: reason });
      }
    }
    if (req.method === 'POST') {
      drainer.started(res);
    }

    let parsedBody: unknown;
    if (req.method === 'POST') {
      const read = await readJson(req);
      if (!read.ok) return rpcError(res, read.status, read.error);
      parsedBody = read.body;
      const legacyPlain = plainLegacyPost(req, parsedBody);
      // A plain 2026-07-28 tools/call or resources/read: the modern handler's fast path (modern-fast.ts).
      const fast = !legacyPlain && req.headers['mcp-protocol-version'] === MODERN_VERSION && modernOf(route);
      if (fast && serveModernFast(fast, req, res, parsedBody, auth)) return;
      if (!legacyPlain && !isLegacyPost(req, parsedBody)) {
        const modern = modernOf(route);
        if (!modern)
          return rpcError(res, 400, {
            code: -32022,
            message: 'Unsupported protocol version',
            data: { supported: LEGACY_VERSIONS },
          });
        return serveModern(modern, req, res, parsedBody, auth);
      }
    }

    if (options.stateless) {
      if (req.method !== 'POST') return rpcError(res, 405, { code: -32000, message: 'stateless gateway: POST only' });
      const transport = new NodeStreamableHttp({});
      const mcp = server(auth, route);
      res.on('close', () => {
        void transport.close().catch(() => undefined);
        void mcp.close().catch(() => undefined);
      });
      await mcp.connect(transport);
      return transport.handleNode(req, res, parsedBody);
    }

    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      if (!session) return rpcError(res, 404, { code: -32001, message: 'session not found' });
      if (session.subject !== subject || session.route !== pathname)
        return rpcError(res, 403, { code: -32001, message: 'the session belongs to another subject or route' });
      // A plain tools/call or resources/read is served by the session's fast path (http-fast.ts).
      if (session.fast?.serve(req, res, parsedBody) === true) return;
      return session.transport.handleNode(req, res, parsedBody);
    }
    if (req.method !== 'POST')
      return rpcError(res, 400, { code: -32000, message: 'an mcp-session-id header is required' });
    const transport: NodeStreamableHttp = new NodeStreamableHttp({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, subject, route: pathname, fast });
      },
    });
    const mcp = server(auth, route);
    const fast = httpFastPath(mcp, transport);
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
      fast?.closed();
    };
    await mcp.connect(transport);
    await transport.handleNode(req, res, parsedBody);
    if (!transport.sessionId) await mcp.close(); // not an initialize request: nothing to keep
  };

  const listener = listenerOf(handle);
  const http = options.tls
    ? createTlsServer({ cert: options.tls.cert, key: options.tls.key }, listener)
    : createServer(listener);
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const address = http.address() as AddressInfo;
  const origin = `${options.tls ? 'https' : 'http'}://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  const url = new URL(`${origin}${path}`);
  resource = options.resource ?? url.href;
  try {
    hosts = hostCheck({
      bound: host,
      publicUrl: resource,
      allowed: options.allowedHosts ?? [],
      trustedProxies: options.trustedProxies ?? [],
    });
  } catch (error) {
    await new Promise<void>((resolve) => http.close(() => resolve()));
    throw error;
  }
  metadataUrl = new URL(`${WELL_KNOWN}${new URL(resource).pathname.replace(/\/$/, '')}`, resource).href;
  return {
    url,
    resourceMetadataUrl: new URL(metadataUrl),
    drain: () => drainer.drain(),
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
