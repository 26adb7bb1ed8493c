/**
 * One client's session with the gateway: one named handler per MCP method, each reading the policy in
 * force once (a {@link PolicyInForce}) and deciding through the gate before anything is forwarded. The
 * handlers take the method's params and a {@link SessionRequest} (what the request carries: its signal,
 * authentication, progress token) and answer the method's result, so a second protocol era can serve the
 * same handlers; `openSession` binds them to an MCP SDK `Server`.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolRequest,
  type CallToolResult,
  type CompleteRequest,
  type CompleteResult,
  type GetPromptRequest,
  type GetPromptResult,
  type ListToolsResult,
  type LoggingLevel,
  type Prompt,
  type ReadResourceRequest,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  type ServerNotification,
  type ServerRequest,
  type Tool as McpTool,
} from '@modelcontextprotocol/sdk/types.js';
import type { GateContext } from '../contracts/gate.js';
import { boundAgentOf } from '../gate/index.js';
import { canonical } from '../names.js';
import type { ToolRegistry } from '../registry.js';
import type { GatewayPeople } from './approvers.js';
import { auditTime, type GatewayAuditRecord } from './audit.js';
import { sessionSubject } from './auth.js';
import { runToolCall } from './calls.js';
import { noCursor, normalUri, type ItemAccess, type ItemAsker, type ItemGate } from './items.js';
import type { Downstream, Relay, RelayedRequest } from './relay.js';
import type { Reloader } from './reload.js';
import { unavailable, type Router } from './router.js';
import type { Upstream } from './upstream.js';
import { upstreamClosedTo } from './tenancy.js';

/** The context of one downstream request: fixed, or derived from the request's authentication. */
export type GatewayRequestContext =
  | GateContext
  | ((request: { readonly authInfo: AuthInfo | undefined; readonly sessionId: string | undefined }) => GateContext);

/** What a session reads of its gateway. */
export interface GatewayCore {
  readonly name: string;
  readonly registry: ToolRegistry;
  readonly router: Router;
  readonly relay: Relay;
  readonly inForce: Pick<Reloader, 'current'>;
  readonly items: ItemGate;
  readonly people: GatewayPeople;
  readonly audit: (record: GatewayAuditRecord) => void;
}

/** What one request to a session carries, whatever the protocol era. */
export interface SessionRequest extends RelayedRequest {
  readonly authInfo: AuthInfo | undefined;
  readonly sessionId: string | undefined;
}

/** One client's session: its server, its context, and the policy each request reads. */
interface Session {
  readonly core: GatewayCore;
  readonly server: Server;
  readonly downstream: Downstream;
  readonly contextOption: () => GatewayRequestContext;
}

/** A new downstream MCP server bound to the gateway's handlers. */
export function openSession(core: GatewayCore, contextOption: () => GatewayRequestContext): Server {
  const server = new Server(
    { name: core.name, version: '0.2.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        completions: {},
        logging: {},
      },
    },
  );
  const session: Session = { core, server, downstream: { server, logging: false }, contextOption };
  type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;
  const of = (extra: Extra): SessionRequest => ({
    signal: extra.signal,
    progressToken: extra._meta?.progressToken,
    sendNotification: (n) => extra.sendNotification(n),
    authInfo: extra.authInfo,
    sessionId: extra.sessionId,
  });
  server.setRequestHandler(ListToolsRequestSchema, (_r, extra) => listTools(session, of(extra)));
  server.setRequestHandler(CallToolRequestSchema, (r, extra) => callTool(session, r.params, of(extra)));
  server.setRequestHandler(ListResourcesRequestSchema, (r, extra) =>
    listResources(session, r.params?.cursor, of(extra)),
  );
  server.setRequestHandler(ListResourceTemplatesRequestSchema, (r, extra) =>
    listResourceTemplates(session, r.params?.cursor, of(extra)),
  );
  server.setRequestHandler(ReadResourceRequestSchema, (r, extra) => readResource(session, r.params, of(extra)));
  server.setRequestHandler(SubscribeRequestSchema, (r, extra) => subscribe(session, r.params.uri, of(extra)));
  server.setRequestHandler(UnsubscribeRequestSchema, (r, extra) => unsubscribe(session, r.params.uri, of(extra)));
  server.setRequestHandler(ListPromptsRequestSchema, (r, extra) => listPrompts(session, r.params?.cursor, of(extra)));
  server.setRequestHandler(GetPromptRequestSchema, (r, extra) => getPrompt(session, r.params, of(extra)));
  server.setRequestHandler(CompleteRequestSchema, (r, extra) => complete(session, r.params, of(extra)));
  server.setRequestHandler(SetLevelRequestSchema, (r, extra) => setLevel(session, r.params.level, of(extra)));
  // Anything else a client asks is refused with an error that names it (never silently dropped).
  server.fallbackRequestHandler = async (request) => {
    throw new McpError(
      ErrorCode.MethodNotFound,
      `toolgate gateway: the method ${JSON.stringify(request.method)} is not forwarded by the gateway`,
    );
  };
  core.relay.add(session.downstream);
  return server;
}

/** The context of a request, from the session's option (read per request: a reload changes the gateway's own). */
function contextOf(session: Session, request: Pick<SessionRequest, 'authInfo' | 'sessionId'>): GateContext {
  const option = session.contextOption();
  return typeof option === 'function' ? option({ authInfo: request.authInfo, sessionId: request.sessionId }) : option;
}

/** Why this request's tenant may not use `upstream` (`gateway.upstreams.<ns>.tenants`), or null. */
function closedTo(
  session: Session,
  request: SessionRequest,
  upstream?: Upstream,
  context?: GateContext,
): string | null {
  if (!upstream) return null;
  const tenant = (context ?? contextOf(session, request)).tenant?.id;
  return upstreamClosedTo(session.core.inForce.current.set, upstream.namespace, tenant);
}

function who(session: Session, request: SessionRequest, context = contextOf(session, request)) {
  return { caller: context.caller?.id ?? null, session: request.sessionId ?? null };
}

/** `tools/list`: the permitted upstreams' tools, drifted ones hidden under `pin: refuse`; the lock file read once. */
async function listTools(session: Session, request: SessionRequest): Promise<ListToolsResult> {
  const { registry, router } = session.core;
  const inForce = session.core.inForce.current;
  const pins = inForce.pins;
  const list = (): McpTool[] => {
    const tools: McpTool[] = [];
    for (const permitted of registry.allowlist(contextOf(session, request)).names) {
      const form = canonical(permitted);
      const upstream = router.listedOwner(form);
      const connection = upstream?.connection;
      const tool = registry.get(permitted);
      if (!connection || !tool || router.impostor(tool.name, upstream) || closedTo(session, request, upstream) !== null)
        continue;
      const definition = connection.definition(tool.name);
      if (!definition) continue;
      // Hidden: a drifted tool under `pin: refuse`, and one left unpinned past its upstream's bound of pins (refused).
      if (pins?.drift(form) && (inForce.onDrift === 'refuse' ? pins.isDrifted(tool) : pins.isUnpinned(tool))) continue;
      tools.push({ ...definition, name: tool.name } as McpTool);
    }
    return tools;
  };
  return { tools: pins ? pins.store.reading(list) : list() };
}

/** `tools/call`: the gate (steps 1–8) on the gateway's route; the upstream's own result returned unchanged. */
async function callTool(
  session: Session,
  params: CallToolRequest['params'],
  request: SessionRequest,
): Promise<CallToolResult> {
  const { core, server } = session;
  const { registry, router, relay, audit } = core;
  const base = contextOf(session, request);
  const toolName = params.name;
  const upstream = router.ownerOfTool(toolName);
  const refused = (reason: string): CallToolResult => {
    audit({
      type: 'tool',
      time: auditTime(),
      ...who(session, request),
      upstream: upstream?.namespace ?? null,
      decision: null,
      status: 'unavailable',
      reason,
    });
    return { isError: true, content: [{ type: 'text', text: reason }] };
  };
  if (upstream && router.impostor(toolName, upstream))
    return refused(
      `toolgate gateway: the tool ${JSON.stringify(toolName)} is offered by upstream "${upstream.namespace}" under another upstream's namespace; refused`,
    );
  const closed = closedTo(session, request, upstream, base);
  if (closed !== null) return refused(closed);
  if (upstream && upstream.state !== 'ready')
    return refused(unavailable(upstream, `the tool ${JSON.stringify(toolName)}`).message);
  return await runToolCall(
    { registry, relay, people: core.people, audit, inForce: () => core.inForce.current },
    {
      server,
      request,
      context: base,
      refreshContext: () => contextOf(session, request),
      asker: askingOf(session, request, base),
      who: who(session, request, base),
      upstream,
      name: toolName,
      arguments: params.arguments ?? {},
    },
  );
}

/** Who asks in one request, as the gateway's person binds and shows it. */
function askingOf(session: Session, request: SessionRequest, base: GateContext): ItemAsker {
  return {
    server: session.server,
    signal: request.signal,
    progressToken: request.progressToken,
    // The request's scope made only when progress is sent (an ask): not for every call.
    sendProgress: (message) =>
      session.core.relay.scopeOf(session.server, request).sendNotification({
        method: 'notifications/progress',
        params: { progressToken: request.progressToken!, progress: 0, message },
      }),
    caller: base.caller?.id ?? null,
    subject: request.authInfo ? sessionSubject(request.authInfo) : null,
    agent: boundAgentOf(base),
    tenant: base.tenant?.id ?? null,
    policyVersion: session.core.inForce.current.policy.version,
    session: request.sessionId ?? null,
  };
}

/** Decides a resource or prompt access through the gate and, allowed, forwards it. */
function throughGate<T>(session: Session, request: SessionRequest, access: ItemAccess<T>): Promise<T> {
  const { core } = session;
  const closed = closedTo(session, request, access.upstream);
  if (closed !== null) return Promise.reject(new McpError(ErrorCode.InvalidRequest, closed));
  return core.items.run(access, askingOf(session, request, contextOf(session, request)), () => core.inForce.current);
}

/** `resources/list`: every upstream's resources the `resources:` rules could permit. */
async function listResources(session: Session, cursor: unknown, request: SessionRequest) {
  noCursor(cursor);
  const { router, relay } = session.core;
  const inForce = session.core.inForce.current;
  const resources: Resource[] = [];
  for (const { upstream, resource, uri } of await router.listResources(relay.scopeOf(session.server, request)))
    if (inForce.set.resources.visible(upstream.namespace, uri) && closedTo(session, request, upstream) === null)
      resources.push(resource);
  return { resources };
}

/** `resources/templates/list`: every upstream's templates, where its namespace can permit anything. */
async function listResourceTemplates(session: Session, cursor: unknown, request: SessionRequest) {
  noCursor(cursor);
  const { router, relay } = session.core;
  const inForce = session.core.inForce.current;
  const all = await router.listAll(
    relay.scopeOf(session.server, request),
    'resources/templates/list',
    (client, params, options) => client.listResourceTemplates(params, options),
    (page): ResourceTemplate[] => page.resourceTemplates,
  );
  const resourceTemplates: ResourceTemplate[] = [];
  for (const [upstream, templates] of all) {
    const compiled: UriTemplate[] = [];
    for (const template of templates) {
      try {
        compiled.push(new UriTemplate(template.uriTemplate));
      } catch {
        continue; // a template that does not parse cannot be routed
      }
      if (inForce.set.resources.mayPermit(upstream.namespace) && closedTo(session, request, upstream) === null)
        resourceTemplates.push(template);
    }
    router.noteTemplates(upstream.namespace, compiled);
  }
  return { resourceTemplates };
}

/** `resources/read`: decided by the `resources:` rules on the URI in normal form, which is what the upstream is sent. */
async function readResource(
  session: Session,
  params: ReadResourceRequest['params'],
  request: SessionRequest,
): Promise<ReadResourceResult> {
  const uri = normalUri(params.uri);
  const upstream = await session.core.router.routeResource(uri, session.core.relay.scopeOf(session.server, request));
  if (upstream.state !== 'ready') throw unavailable(upstream, `reading ${JSON.stringify(uri)}`);
  return await throughGate(session, request, {
    kind: 'resource',
    action: 'read',
    upstream,
    args: { namespace: canonical(upstream.namespace), uri, action: 'read' },
    target: uri,
    forward: (args) =>
      session.core.relay.forwarded(session.server, request, upstream, (client, options) =>
        client.readResource({ ...params, uri: String(args['uri']) }, options),
      ),
  });
}

/** `resources/subscribe`: decided as a read; the upstream is subscribed once for all its clients. */
async function subscribe(session: Session, raw: string, request: SessionRequest): Promise<Record<string, never>> {
  const uri = normalUri(raw);
  const upstream = await session.core.router.routeResource(uri, session.core.relay.scopeOf(session.server, request));
  if (upstream.state !== 'ready') throw unavailable(upstream, `subscribing to ${JSON.stringify(uri)}`);
  if (!upstream.capabilities.resources?.subscribe)
    throw new McpError(
      ErrorCode.MethodNotFound,
      `toolgate gateway: upstream "${upstream.namespace}" does not support resource subscriptions`,
    );
  await throughGate(session, request, {
    kind: 'resource',
    action: 'subscribe',
    upstream,
    args: { namespace: canonical(upstream.namespace), uri, action: 'subscribe' },
    target: uri,
    forward: async (args) => {
      const decided = String(args['uri']);
      await session.core.relay.subscribe(session.server, upstream, decided, () =>
        // On behalf of this request (an upstream's log line or question meanwhile is this client's, not another's).
        upstream.forward(session.core.relay.scopeOf(session.server, request), (scope) =>
          upstream.client!.subscribeResource({ uri: decided }, upstream.requestOptions(scope)),
        ),
      );
    },
  });
  return {};
}

/** `resources/unsubscribe`: nothing to decide. */
async function unsubscribe(session: Session, raw: string, request: SessionRequest): Promise<Record<string, never>> {
  const uri = normalUri(raw);
  const upstream = await session.core.router.routeResource(uri, session.core.relay.scopeOf(session.server, request));
  await session.core.relay.unsubscribe(session.server, upstream, uri, request);
  return {};
}

/** `prompts/list`: every upstream's prompts the `prompts:` rules could permit, under their shown names. */
async function listPrompts(session: Session, cursor: unknown, request: SessionRequest) {
  noCursor(cursor);
  const { router, relay } = session.core;
  const inForce = session.core.inForce.current;
  const all = await router.listAll(
    relay.scopeOf(session.server, request),
    'prompts/list',
    (client, params, options) => client.listPrompts(params, options),
    (page): Prompt[] => page.prompts,
  );
  const prompts: Prompt[] = [];
  for (const [upstream, list] of all) {
    for (const prompt of router.notePrompts(upstream.namespace, list))
      if (inForce.set.prompts.visible(upstream.namespace, prompt.name) && closedTo(session, request, upstream) === null)
        prompts.push({ ...prompt, name: upstream.shown(prompt.name) });
  }
  return { prompts };
}

/** `prompts/get`: decided by the `prompts:` rules, conditions on the prompt's arguments. */
async function getPrompt(
  session: Session,
  params: GetPromptRequest['params'],
  request: SessionRequest,
): Promise<GetPromptResult> {
  const { upstream, own } = session.core.router.routePrompt(params.name);
  if (upstream.state !== 'ready') throw unavailable(upstream, `the prompt ${JSON.stringify(params.name)}`);
  return throughGate(session, request, {
    kind: 'prompt',
    action: 'get',
    upstream,
    args: { namespace: canonical(upstream.namespace), name: own, action: 'get', arguments: params.arguments ?? {} },
    target: params.name,
    forward: (args) =>
      session.core.relay.forwarded(session.server, request, upstream, (client, options) =>
        client.getPrompt(
          { ...params, name: String(args['name']), arguments: args['arguments'] as Record<string, string> },
          options,
        ),
      ),
  });
}

/**
 * `completion/complete`: a prompt's decided as getting it with the arguments the completion knows; a
 * template's as reaching the template's URI (completing names what it may expand to).
 */
async function complete(
  session: Session,
  params: CompleteRequest['params'],
  request: SessionRequest,
): Promise<CompleteResult> {
  const { router, relay } = session.core;
  const ref = params.ref;
  const forwardTo = (upstream: Upstream, complete: CompleteRequest['params']): Promise<CompleteResult> => {
    if (upstream.state !== 'ready') throw unavailable(upstream, 'completion');
    if (!upstream.capabilities.completions)
      throw new McpError(
        ErrorCode.MethodNotFound,
        `toolgate gateway: upstream "${upstream.namespace}" does not offer completions`,
      );
    return relay.forwarded(session.server, request, upstream, (client, options) => client.complete(complete, options));
  };
  if (ref.type === 'ref/prompt') {
    const { upstream, own } = router.routePrompt(ref.name);
    // Decided as getting the prompt with the arguments the completion knows: a rule whose conditions need
    // another argument cannot be judged, and refuses.
    const known = params.context?.arguments ?? {};
    return throughGate(session, request, {
      kind: 'prompt',
      action: 'complete',
      upstream,
      args: { namespace: canonical(upstream.namespace), name: own, action: 'complete', arguments: known },
      target: ref.name,
      forward: (args) =>
        forwardTo(upstream, {
          ...params,
          ref: { ...ref, name: String(args['name']) },
          ...(params.context
            ? { context: { ...params.context, arguments: args['arguments'] as Record<string, string> } }
            : {}),
        }),
    });
  }
  const upstream = router.routeTemplate(ref.uri);
  if (!session.core.inForce.current.set.resources.mayPermit(upstream.namespace))
    throw new McpError(
      ErrorCode.InvalidRequest,
      `toolgate: the resources of upstream "${upstream.namespace}" are refused by the policy`,
    );
  // Completing a template names what it may expand to: decided as reaching the template's URI (a deny on
  // docs://secret/** refuses completing docs://secret/{name}).
  const uri = normalUri(ref.uri);
  return throughGate(session, request, {
    kind: 'resource',
    action: 'complete',
    upstream,
    args: { namespace: canonical(upstream.namespace), uri, action: 'complete' },
    target: ref.uri,
    forward: () => forwardTo(upstream, params),
  });
}

/** `logging/setLevel`: to the 2025-era upstreams that log and serve the tenant; kept for 2026-07-28 ones (Relay.scopeOf). */
async function setLevel(session: Session, level: LoggingLevel, request: SessionRequest): Promise<object> {
  const hears = (u: Upstream): boolean => closedTo(session, request, u) === null;
  Object.assign(session.downstream, { hears, logging: true });
  const { router, relay } = session.core;
  relay.setLevel(session.downstream, level);
  const scope = relay.scopeOf(session.server, request);
  await Promise.all(
    [...router.upstreams.values()]
      .filter((u) => u.state === 'ready' && u.session?.era !== 'modern' && u.capabilities.logging && hears(u))
      .map((u) => u.forward(scope, (s) => u.client!.setLoggingLevel(level, u.requestOptions(s)))),
  );
  return {};
}

/**
 * The handlers of one request, for a protocol era that binds them to its own server: the 2026-07-28
 * downstream (modern.ts) serves each request on a fresh server, with `peer` in place of a session's
 * 2025-era `Server` (what the gateway asks of it: the client's capabilities, notifications).
 */
export function requestHandlers(core: GatewayCore, contextOption: () => GatewayRequestContext, peer: Server) {
  const session: Session = { core, server: peer, downstream: { server: peer, logging: false }, contextOption };
  return {
    listTools: (request: SessionRequest) => listTools(session, request),
    callTool: (params: CallToolRequest['params'], request: SessionRequest) => callTool(session, params, request),
    listResources: (cursor: unknown, request: SessionRequest) => listResources(session, cursor, request),
    listResourceTemplates: (cursor: unknown, request: SessionRequest) =>
      listResourceTemplates(session, cursor, request),
    readResource: (params: ReadResourceRequest['params'], request: SessionRequest) =>
      readResource(session, params, request),
    listPrompts: (cursor: unknown, request: SessionRequest) => listPrompts(session, cursor, request),
    getPrompt: (params: GetPromptRequest['params'], request: SessionRequest) => getPrompt(session, params, request),
    complete: (params: CompleteRequest['params'], request: SessionRequest) => complete(session, params, request),
    /** The context a request is decided under (the factory computes what it may be shown). */
    contextOf: (request: Pick<SessionRequest, 'authInfo' | 'sessionId'>) => contextOf(session, request),
  };
}
