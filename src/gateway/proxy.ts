/**
 * `createMcpProxy` / `serveMcpProxyHttp` (`toolgate/mcp`): the gateway with one upstream server, its tools
 * under their own names. What runs is the gateway (`createGateway`, `serveGatewayHttp`); this file only
 * maps the proxy's options (a bare PermissionPolicy, a context that may depend on the request, one audit
 * record per tool decision) onto it.
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/client';
import type { McpConnection, McpServerOptions } from '../mcp/index.js';
import type { ContextSource } from '../contracts/gate.js';
import type { Decision } from '../decision.js';
import type { GateContext } from '../contracts/gate.js';
import { describe } from '../names.js';
import { PermissionPolicy } from '../permissions/policy.js';
import { PolicySet } from '../policy-file/policy-set.js';
import type { ToolRegistry, ToolResult } from '../registry.js';
import type { BearerAuthenticator } from './auth.js';
import { checkContext, narrowContext } from './context.js';
import { createGateway, type Gateway } from './gateway.js';
import { serveGatewayHttp, type GatewayHttpOptions } from './http.js';

/** The upstream server: how to reach it, and whether its annotations are believed. */
export type McpUpstream = Omit<
  McpServerOptions,
  'prefix' | 'output' | 'client' | 'clientName' | 'connectTimeoutMs' | 'onEraViolation'
>;

/** One audit record: a call's Decision, who asked, and how the call ended. */
export interface McpAuditRecord {
  readonly time: string;
  /** The caller's id (the token subject over HTTP), or null. */
  readonly caller: string | null;
  /** The MCP session, over HTTP. */
  readonly session: string | null;
  readonly decision: Decision;
  /** `ok`/`error`: ran upstream; `refused`: the upstream never saw it. */
  readonly status: ToolResult['status'];
}

/** What a downstream request carries that a context may depend on. */
export interface McpRequestInfo {
  readonly authInfo: AuthInfo | undefined;
  readonly sessionId: string | undefined;
}

/** The context of one downstream request: fixed, or derived from the request's authentication. */
export type McpRequestContext = ContextSource<McpRequestInfo>;

/** Options of {@link McpProxy.createServer}. */
export interface McpServerContextOptions {
  /** Replaces the proxy's context for this server. @default the proxy's `context` */
  readonly context?: McpRequestContext;
  /**
   * Narrows the server's context per request (the HTTP gateway passes the token's caller layer here):
   * every layer it states is intersected with the same layer of the server's context, so it can only
   * take tools away. @default none
   */
  readonly narrow?: (request: McpRequestInfo) => GateContext;
}

/** Options of {@link createMcpProxy}. */
export interface McpProxyOptions {
  /** The upstream MCP server (stdio command, URL or transport). */
  readonly upstream: McpUpstream;
  /** The permission policy. @default none: only the allowlist applies */
  readonly policy?: PermissionPolicy | null;
  /** Who is asking, for servers created without their own context. @default {} */
  readonly context?: McpRequestContext;
  /** How long a call may take upstream before the client gets an error. @default 60_000 */
  readonly callTimeoutMs?: number;
  /** How long the user has to answer an elicitation before the call is denied. @default 120_000 */
  readonly approvalTimeoutMs?: number;
  /** Receives one record per tools/call decision (e.g. to append to a JSONL file). @default none */
  readonly audit?: (record: McpAuditRecord) => void;
  /** The gateway's server name towards its clients. @default 'toolgate-mcp-proxy' */
  readonly name?: string;
}

/** A running proxy: a gateway with one upstream. */
export interface McpProxy {
  /** The gateway that serves it (one upstream, namespace `upstream`, tools under their own names). */
  readonly gateway: Gateway;
  /** The registry holding the upstream's tools, the policy and the events. */
  readonly registry: ToolRegistry;
  /** The upstream's current connection (null while it is down). */
  readonly upstream: McpConnection | null;
  /** The proxy's own context (its agent, tenant and caller layers); a server's `narrow` only narrows it. */
  readonly context: McpRequestContext;
  /** A new downstream MCP server (one per client connection or HTTP session); connect it to a transport. */
  createServer(options?: McpServerContextOptions): Server;
  /** Subscribes to the upstream connection closing (a crash, or close()); returns the unsubscribe function. */
  onUpstreamClosed(listener: () => void): () => void;
  /** True once the upstream connection has closed. */
  readonly upstreamClosed: boolean;
  /** Closes every downstream server and the upstream connection (a stdio upstream is stopped). */
  close(): Promise<void>;
}

/** The namespace of a proxy's one upstream (its tools keep their own names). */
export const PROXY_UPSTREAM = 'upstream';

/**
 * Starts a gateway in front of one upstream MCP server. Tools, resources (refused unless a policy file's
 * `resources:` rule permits them; a bare PermissionPolicy has none) and prompts (likewise) are served as
 * the gateway serves them.
 *
 * @example
 * const proxy = await createMcpProxy({
 *   upstream: { stdio: { command: 'mcp-server-filesystem', args: ['/srv/data'] } },
 *   policy,
 *   context: { agent: { name: 'fs-agent', tools: ['read_text_file', 'list_directory'] } },
 * });
 * await proxy.createServer().connect(new StdioServerTransport());
 */
export async function createMcpProxy(options: McpProxyOptions): Promise<McpProxy> {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`createMcpProxy options must be an object, got ${describe(options)}`);
  const upstream = options.upstream;
  if (typeof upstream !== 'object' || upstream === null)
    throw new TypeError(`option "upstream" must be an object, got ${describe(upstream)}`);
  if ((upstream as McpServerOptions).client !== undefined)
    throw new TypeError('option "upstream.client" is not supported: give "stdio", "url" or "transport"');
  const policy = options.policy ?? null;
  if (policy !== null && !(policy instanceof PermissionPolicy))
    throw new TypeError(`option "policy" must be a PermissionPolicy, got ${describe(policy)}`);
  const context = options.context ?? {};
  checkContext(context);
  const audit = options.audit;
  if (audit !== undefined && typeof audit !== 'function')
    throw new TypeError(`option "audit" must be a function, got ${describe(audit)}`);

  const given = upstream.transport;
  let used = false;
  const gateway = await createGateway({
    policy: policySetOf(policy ?? new PermissionPolicy({ rules: [], fallback: 'allow' })),
    upstreams: {
      [PROXY_UPSTREAM]: {
        ...(upstream.stdio ? { stdio: upstream.stdio } : {}),
        ...(upstream.url !== undefined ? { url: upstream.url } : {}),
        ...(upstream.headers ? { headers: upstream.headers } : {}),
        // A transport object connects once; a second attempt (after it closed) finds it closed and fails.
        ...(given
          ? {
              transport: (): Transport => {
                if (used) throw new Error('the upstream transport given to createMcpProxy has closed');
                used = true;
                return given;
              },
            }
          : {}),
        prefix: false,
        ...(upstream.trusted !== undefined ? { trusted: upstream.trusted } : {}),
        ...(upstream.metadata ? { metadata: upstream.metadata } : {}),
        ...(upstream.parameters ? { parameters: upstream.parameters } : {}),
        ...(options.callTimeoutMs !== undefined ? { callTimeoutMs: options.callTimeoutMs } : {}),
      },
    },
    context: typeof context === 'function' ? {} : context,
    pins: null,
    name: options.name ?? 'toolgate-mcp-proxy',
    ...(options.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: options.approvalTimeoutMs } : {}),
    ...(audit
      ? {
          audit: (record) => {
            if (record.type === 'tool' && record.decision)
              audit({
                time: record.time,
                caller: record.caller,
                session: record.session,
                decision: record.decision,
                status: record.status === 'unavailable' ? 'error' : record.status,
              });
          },
        }
      : {}),
  });
  const only = gateway.upstreams.get(PROXY_UPSTREAM)!;
  if (only.state !== 'ready') {
    await gateway.close();
    throw new Error(`the upstream MCP server could not be started: ${only.reason}`);
  }
  let closed = false;
  const listeners = new Set<() => void>();
  gateway.onUpstreamState((u) => {
    if (closed || u.state === 'ready' || u.state === 'connecting') return;
    closed = true;
    for (const listener of listeners) listener();
  });

  return {
    gateway,
    registry: gateway.registry,
    get upstream() {
      return only.connection;
    },
    context,
    createServer(serverOptions: McpServerContextOptions = {}) {
      const base = serverOptions.context ?? context;
      checkContext(base);
      const narrow = serverOptions.narrow;
      if (narrow !== undefined && typeof narrow !== 'function')
        throw new TypeError(`option "narrow" must be a function of the request, got ${describe(narrow)}`);
      if (typeof base !== 'function' && narrow === undefined) return gateway.createServer({ context: base });
      return gateway.createServer({
        context: (request) => {
          const own = typeof base === 'function' ? base(request) : base;
          return narrow ? narrowContext(own, narrow(request)) : own;
        },
      });
    },
    onUpstreamClosed(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    get upstreamClosed() {
      return closed;
    },
    close: () => gateway.close(),
  };
}

/** Options of {@link serveMcpProxyHttp}. */
export interface McpProxyHttpOptions extends Pick<GatewayHttpOptions, 'port' | 'host' | 'allowNonLoopback' | 'path'> {
  /** Verifies the bearer token of every request (its audience, if any, is the authenticator's to check). */
  readonly authenticate: BearerAuthenticator;
  /**
   * The gate context of a request from its verified token. It narrows the proxy's own context (agent,
   * tenant and caller layers: each layer it states is intersected with the proxy's), never replaces it.
   * @default caller { id: clientId, scopes }
   */
  readonly context?: GatewayHttpOptions['context'];
}

/** A listening HTTP proxy. */
export interface McpProxyHttpServer {
  readonly url: URL;
  /** Closes the sessions and stops listening (the proxy itself stays open). */
  close(): Promise<void>;
}

/**
 * Serves a proxy over Streamable HTTP with sessions: `serveGatewayHttp` with the token's audience left to
 * the authenticator (`jwtAuthenticator({ audience })`). Each request's token is verified; a session
 * belongs to the subject that opened it; the token's caller layer narrows the proxy's own context.
 */
export async function serveMcpProxyHttp(proxy: McpProxy, options: McpProxyHttpOptions): Promise<McpProxyHttpServer> {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`serveMcpProxyHttp options must be an object, got ${describe(options)}`);
  if (typeof options.authenticate !== 'function')
    throw new TypeError(`option "authenticate" must be a function, got ${describe(options.authenticate)}`);
  if (options.context !== undefined && typeof options.context !== 'function')
    throw new TypeError(`option "context" must be a function of the token, got ${describe(options.context)}`);
  return serveGatewayHttp(
    { context: proxy.context, createServer: (o) => proxy.createServer(o) },
    {
      port: options.port,
      ...(options.host !== undefined ? { host: options.host } : {}),
      ...(options.allowNonLoopback !== undefined ? { allowNonLoopback: options.allowNonLoopback } : {}),
      ...(options.path !== undefined ? { path: options.path } : {}),
      authenticate: options.authenticate,
      audience: false,
      ...(options.context ? { context: options.context } : {}),
    },
  );
}

/** A PolicySet holding a bare PermissionPolicy: tool rules only, no resource or prompt rules (refused). */
function policySetOf(policy: PermissionPolicy): PolicySet {
  return new PolicySet({
    file: null,
    data: { version: 1 },
    policy,
    tools: [],
    rules: [],
    positionOf: () => ({ line: 1, column: 1 }),
  });
}
