/**
 * The gateway's 2026-07-28 downstream: stateless, one SDK v2 server per request, bound to the same
 * session handlers as the 2025-era sessions (session.ts), so both eras get the same decisions. The SDK's
 * entry (`createMcpHandler`, modern only) answers what the revision asks of the wire before any handler
 * runs: `Mcp-Method` / `Mcp-Name` that disagree with the body (-32020, HTTP 400), a version it does not
 * speak (-32022 naming the ones it does), a request without the required `_meta` (-32602). Every list
 * (per caller: it is filtered by the caller's allowlist and rules) and every read carries
 * `cacheScope: "private"` with a short `ttlMs`; `server/discover` advertises what the upstreams offer and
 * this caller may use.
 */
import {
  createMcpHandler,
  Server as ModernServer,
  type AuthInfo,
  type McpHttpHandler,
  type ServerCapabilities,
} from '@modelcontextprotocol/server';
import type { GateContext } from '../contracts/gate.js';
import { declaresTasks, TASKS_EXTENSION } from '../mcp/index.js';
import { ModernBinding, ModernRequest, PRIVATE, PRIVATE_TTL_MS } from './modern-binding.js';
import type { GatewayCore, GatewayRequestContext } from './session.js';
import { challengeOf, type Exchange } from './stepup.js';
import { taskKeyOf } from './tasks.js';

/** The request-level `params` of a parsed JSON-RPC body, when it is one request. */
function paramsOf(body: unknown): unknown {
  return body !== null && typeof body === 'object' && !Array.isArray(body)
    ? (body as { params?: unknown }).params
    : undefined;
}

export { PRIVATE_TTL_MS };

/**
 * The HTTP handler of the 2026-07-28 downstream (web-standard `fetch`); `context` is the context of a
 * request from its authentication (the HTTP server narrows the gateway's own by the token's).
 */
export function modernHandler(
  core: GatewayCore,
  context: () => GatewayRequestContext,
  onerror?: (error: Error) => void,
  resourceMetadata?: () => string | undefined,
): McpHttpHandler {
  // Each exchange in flight by its web Request, which the SDK hands the factory (`requestInfo`): passed to
  // that request's own server, not in async-local storage (on Node 20 it costs every promise; issue 25).
  const exchanges = new WeakMap<Request, Exchange>();
  // What the requests share, bound once (issue 25); each request's own state is made with its server.
  const binding = new ModernBinding(core, context);
  const handler = createMcpHandler(
    ({ authInfo, requestInfo }) => {
      const exchange = requestInfo && exchanges.get(requestInfo);
      if (!exchange) throw new Error('toolgate gateway: a 2026-07-28 request outside its HTTP exchange; refused');
      return modernServer(binding, authInfo, exchange);
    },
    { legacy: 'reject', ...(onerror ? { onerror } : {}) },
  );
  // A call refused for want of a scope answers 403 and the challenge (stepup.ts), its JSON-RPC body kept.
  const fetch: McpHttpHandler['fetch'] = async (request, options) => {
    if (exchanges.has(request)) throw new Error('toolgate gateway: one HTTP request served twice at once');
    const exchange: Exchange = { tasks: declaresTasks(paramsOf(options?.parsedBody)) };
    exchanges.set(request, exchange);
    const answer = await handler.fetch(request, options).finally(() => exchanges.delete(request));
    if (!exchange.stepUp) return answer;
    const headers = new Headers(answer.headers);
    headers.set('www-authenticate', challengeOf(exchange.stepUp, resourceMetadata?.()));
    return new Response(await answer.text(), { status: 403, headers });
  };
  return { ...handler, fetch };
}

/** The cache hints of a 2026-07-28 server of the gateway's: its lists and reads are private. */
const CACHE_HINTS = Object.freeze({
  'server/discover': PRIVATE,
  'tools/list': PRIVATE,
  'resources/list': PRIVATE,
  'resources/templates/list': PRIVATE,
  'prompts/list': PRIVATE,
  'resources/read': PRIVATE,
});

/** One request's server: what it advertises is what this caller may use of what the upstreams offer. */
export function modernServer(binding: ModernBinding, authInfo: AuthInfo | undefined, exchange: Exchange): ModernServer {
  const caller = binding.callerOf(authInfo);
  // The tasks extension: offered to a client that declared it, where an upstream offers it and the
  // gateway can bind a handle to its creator (the owner's secret).
  const core = binding.core;
  const secret = core.people.requestState?.secret;
  const tasksKey = secret !== undefined && exchange.tasks && offersTasks(core) ? taskKeyOf(secret) : undefined;
  const capabilities = capabilitiesFor(core, caller, tasksKey !== undefined);
  const server = new ModernServer({ name: core.name, version: '0.2.0' }, { capabilities, cacheHints: CACHE_HINTS });
  binding.bind(server, new ModernRequest(binding, exchange, tasksKey), capabilities);
  return server;
}

/**
 * The capabilities one caller is shown: tools when the allowlist permits any, resources, prompts,
 * completions and logging when a ready upstream offers them. Never `listChanged` or `subscribe`: the
 * gateway does not serve `subscriptions/listen` yet, so it does not promise change notices.
 */
export function capabilitiesFor(core: GatewayCore, context: GateContext, tasks = false): ServerCapabilities {
  const ready = [...core.router.upstreams.values()].filter((u) => u.state === 'ready');
  const offered = (key: keyof ServerCapabilities): boolean => ready.some((u) => u.capabilities[key] !== undefined);
  const capabilities: ServerCapabilities = {};
  if (core.registry.allowlist(context).names.length > 0) capabilities.tools = {};
  if (offered('resources')) capabilities.resources = {};
  if (offered('prompts')) capabilities.prompts = {};
  if (offered('completions')) capabilities.completions = {};
  if (offered('logging')) capabilities.logging = {};
  if (tasks && capabilities.tools) capabilities.extensions = { [TASKS_EXTENSION]: {} };
  return capabilities;
}

/** Whether a ready upstream offers the tasks extension. */
function offersTasks(core: GatewayCore): boolean {
  for (const upstream of core.router.upstreams.values()) if (upstream.offersTasks) return true;
  return false;
}
