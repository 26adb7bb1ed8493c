/**
 * A policy-enforcing MCP gateway: an MCP server in front of an upstream MCP server. `tools/list` shows
 * what the allowlist permits; `tools/call` passes the gate before the upstream sees anything; an ask is
 * put to the user by MCP elicitation when the client supports it (otherwise the registry's handler or
 * fallback decides: deny unless configured); every decision can be written to an audit sink.
 */
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool as McpTool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Decision } from '../../decision.js';
import type { AllowlistLayer } from '../../allowlist.js';
import type { GateContext } from '../../gate/precheck.js';
import { canonical, describe, displaySafe } from '../../names.js';
import type { PermissionHandler, PermissionRequest } from '../../permissions/handler.js';
import { PermissionPolicy } from '../../permissions/policy.js';
import { ToolRegistry, type ToolResult } from '../../registry.js';
import { dispatchOne } from '../route.js';
import { connectMcpServer, type McpConnection, type McpServerOptions } from './client.js';

/** The upstream server: how to reach it, and whether its annotations are believed. */
export type McpUpstream = Omit<McpServerOptions, 'prefix' | 'output'>;

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
export type McpRequestContext = GateContext | ((request: McpRequestInfo) => GateContext);

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
  /** The upstream MCP server (stdio command, URL, transport or client). */
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

/** A running gateway. */
export interface McpProxy {
  /** The registry holding the upstream's tools, the policy and the events. */
  readonly registry: ToolRegistry;
  readonly upstream: McpConnection;
  /** The proxy's own context (its agent, tenant and caller layers); a server's `narrow` only narrows it. */
  readonly context: McpRequestContext;
  /** A new downstream MCP server (one per client connection or HTTP session); connect it to a transport. */
  createServer(options?: McpServerContextOptions): Server;
  /** Subscribes to the upstream connection closing (a crash, or close()); returns the unsubscribe function. */
  onUpstreamClosed(listener: () => void): () => void;
  /** True once the upstream connection is closed. */
  readonly upstreamClosed: boolean;
  /** Closes every downstream server and the upstream connection (a stdio upstream is stopped). */
  close(): Promise<void>;
}

/**
 * Starts a gateway in front of an upstream MCP server.
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
  if (typeof options.upstream !== 'object' || options.upstream === null)
    throw new TypeError(`option "upstream" must be an object, got ${describe(options.upstream)}`);
  const policy = options.policy ?? null;
  if (policy !== null && !(policy instanceof PermissionPolicy))
    throw new TypeError(`option "policy" must be a PermissionPolicy, got ${describe(policy)}`);
  const defaultContext = options.context ?? {};
  checkContext(defaultContext);
  const audit = options.audit;
  if (audit !== undefined && typeof audit !== 'function')
    throw new TypeError(`option "audit" must be a function, got ${describe(audit)}`);
  const name = options.name ?? 'toolgate-mcp-proxy';

  const registry = new ToolRegistry({
    ...(options.callTimeoutMs !== undefined ? { toolTimeoutMs: options.callTimeoutMs } : {}),
    handlerTimeoutMs: options.approvalTimeoutMs ?? 120_000,
  });
  if (policy) registry.setPermissionPolicy(policy);

  const upstream = await connectMcpServer(registry, {
    ...options.upstream,
    prefix: null,
    output: 'result',
    clientName: name,
  });
  const servers = new Set<Server>();
  const closeListeners = new Set<() => void>();
  let upstreamClosed = false;
  let closing = false;

  const previousOnClose = upstream.client.onclose;
  upstream.client.onclose = () => {
    previousOnClose?.();
    upstreamClosed = true;
    for (const listener of closeListeners) listener();
  };
  upstream.onToolsChanged(() => {
    for (const server of servers) server.sendToolListChanged().catch(() => undefined);
  });

  const createServer = (serverOptions: McpServerContextOptions = {}): Server => {
    const contextOption = serverOptions.context ?? defaultContext;
    checkContext(contextOption);
    const narrow = serverOptions.narrow;
    if (narrow !== undefined && typeof narrow !== 'function')
      throw new TypeError(`option "narrow" must be a function of the request, got ${describe(narrow)}`);
    const server = new Server({ name, version: '0.1.0' }, { capabilities: { tools: { listChanged: true } } });
    const contextOf = (extra: { authInfo?: AuthInfo | undefined; sessionId?: string | undefined }): GateContext => {
      const request = { authInfo: extra.authInfo, sessionId: extra.sessionId };
      const base = typeof contextOption === 'function' ? contextOption(request) : contextOption;
      return narrow ? narrowContext(base, narrow(request)) : base;
    };

    server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
      const tools: McpTool[] = [];
      for (const permitted of registry.allowlist(contextOf(extra)).names) {
        const definition = upstream.definition(permitted);
        if (definition) tools.push(definition);
      }
      return { tools };
    });

    server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
      const base = contextOf(extra);
      const context: GateContext = { ...base, signal: extra.signal };
      const call = { id: `mcp-${randomUUID()}`, name: request.params.name, arguments: request.params.arguments ?? {} };
      const result = await dispatchOne(registry, call, context, elicitationApprover(server));
      if (audit) {
        try {
          audit({
            time: new Date().toISOString(),
            caller: base.caller?.id ?? null,
            session: extra.sessionId ?? null,
            decision: result.decision,
            status: result.status,
          });
        } catch (error) {
          process.emitWarning(
            `toolgate: the MCP proxy audit sink threw: ${error instanceof Error ? error.message : String(error)}`,
            { code: 'TOOLGATE_AUDIT' },
          );
        }
      }
      if (result.status === 'ok') return result.value as CallToolResult;
      const text =
        result.status === 'error' && upstreamClosed
          ? `The upstream MCP server is not running (its connection closed), so ${JSON.stringify(call.name)} did not complete. ${result.content}`
          : result.content;
      return { isError: true, content: [{ type: 'text', text }] };
    });

    servers.add(server);
    const previous = server.onclose;
    server.onclose = () => {
      previous?.();
      servers.delete(server);
    };
    return server;
  };

  return {
    registry,
    upstream,
    context: defaultContext,
    createServer,
    onUpstreamClosed(listener) {
      closeListeners.add(listener);
      return () => closeListeners.delete(listener);
    },
    get upstreamClosed() {
      return upstreamClosed;
    },
    async close() {
      if (closing) return;
      closing = true;
      await Promise.allSettled([...servers].map((s) => s.close()));
      await upstream.close().catch(() => undefined);
    },
  };
}

/**
 * The approver for an ask: MCP elicitation when the connected client declares it can answer a form;
 * otherwise none, and the registry's handler or its fallback (deny) decides.
 */
function elicitationApprover(server: Server): PermissionHandler | undefined {
  const elicitation = server.getClientCapabilities()?.elicitation as { form?: unknown; url?: unknown } | undefined;
  if (!elicitation || (elicitation.form === undefined && elicitation.url !== undefined)) return undefined;
  return async (request: PermissionRequest) => {
    const answer = await server.elicitInput({
      mode: 'form',
      // Everything shown to the person is escaped (controls, bidi and other invisible characters), so the
      // prompt reads as the call that runs.
      message:
        `Allow the tool call ${displaySafe(request.toolName)}(${displaySafe(JSON.stringify(request.parameters))})? ` +
        `Rule ${displaySafe(JSON.stringify(request.ruleName))} asks for approval: ${displaySafe(request.reason)}`,
      requestedSchema: {
        type: 'object',
        properties: {
          approve: {
            type: 'boolean',
            title: 'Allow this call',
            description: `Run ${displaySafe(request.toolName)} once with these arguments`,
            default: false,
          },
        },
        required: ['approve'],
      },
    });
    return answer.action === 'accept' && answer.content?.['approve'] === true ? 'allow' : 'deny';
  };
}

/**
 * `base` narrowed by `over`: each layer (agent declaration, tenant, caller) stated by both is their
 * intersection by canonical form; a layer stated by one only is that one's. The result never permits
 * a tool `base` refuses. A context holding a resolved `allowlist` cannot be narrowed and is refused.
 */
export function narrowContext(base: GateContext, over: GateContext): GateContext {
  if (base.allowlist !== undefined || over.allowlist !== undefined)
    throw new TypeError(
      'a gate context with a resolved "allowlist" cannot be narrowed by a request; give agent/tenant/caller layers instead',
    );
  const baseAgent = typeof base.agent === 'object' ? base.agent : undefined;
  const overAgent = typeof over.agent === 'object' ? over.agent : undefined;
  const agentName =
    (typeof base.agent === 'string' ? base.agent : baseAgent?.name) ??
    (typeof over.agent === 'string' ? over.agent : overAgent?.name);
  const declared = intersect(baseAgent?.tools, overAgent?.tools);
  const tenantTools = intersect(base.tenant?.tools, over.tenant?.tools);
  const tenantId = base.tenant?.id ?? over.tenant?.id;
  const scopes = intersect(base.caller?.scopes, over.caller?.scopes);
  const callerId = over.caller?.id ?? base.caller?.id;
  const runId = base.runId ?? over.runId;
  return {
    ...(declared !== undefined && declared !== null
      ? { agent: { name: agentName ?? 'agent', tools: declared } }
      : agentName !== undefined
        ? { agent: agentName }
        : {}),
    ...(base.tenant || over.tenant
      ? {
          tenant: {
            ...(tenantId !== undefined ? { id: tenantId } : {}),
            ...(tenantTools !== undefined ? { tools: tenantTools } : {}),
          },
        }
      : {}),
    ...(base.caller || over.caller
      ? {
          caller: {
            ...(callerId !== undefined ? { id: callerId } : {}),
            ...(scopes !== undefined ? { scopes } : {}),
          },
        }
      : {}),
    ...(runId !== undefined ? { runId } : {}),
  };
}

// Intersections of frozen arrays are kept (weakly), so a steady caller still hits the gate's allowlist cache.
const intersections = new WeakMap<object, WeakMap<object, readonly string[]>>();

/** The names of `a` whose canonical form `b` holds; an absent layer (null/undefined) states nothing. */
function intersect(a: AllowlistLayer, b: AllowlistLayer): AllowlistLayer {
  if (a === null || a === undefined) return b;
  if (b === null || b === undefined || a === b) return a;
  for (const layer of [a, b])
    if (typeof layer === 'string' || typeof (layer as Iterable<string>)[Symbol.iterator] !== 'function')
      throw new TypeError(`an allowlist layer must be an iterable of tool names, got ${describe(layer)}`);
  const cacheable = Object.isFrozen(a) && Object.isFrozen(b) && Array.isArray(a) && Array.isArray(b);
  if (cacheable) {
    const hit = intersections.get(a)?.get(b);
    if (hit) return hit;
  }
  const forms = new Set<string>();
  for (const name of b) {
    if (typeof name !== 'string') throw new TypeError(`a tool name must be a string, got ${describe(name)}`);
    forms.add(canonical(name));
  }
  const out: string[] = [];
  for (const name of a) {
    if (typeof name !== 'string') throw new TypeError(`a tool name must be a string, got ${describe(name)}`);
    if (forms.has(canonical(name))) out.push(name);
  }
  const result = Object.freeze(out);
  if (cacheable) {
    let inner = intersections.get(a);
    if (!inner) intersections.set(a, (inner = new WeakMap()));
    inner.set(b, result);
  }
  return result;
}

function checkContext(context: unknown): void {
  if (typeof context !== 'function' && (typeof context !== 'object' || context === null)) {
    throw new TypeError(
      `option "context" must be a gate context object or a function of the request, got ${describe(context)}`,
    );
  }
}
