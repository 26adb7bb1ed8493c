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
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  createMcpHandler,
  inputRequired,
  ProtocolError,
  ProtocolErrorCode,
  Server as ModernServer,
  type AuthInfo,
  type CacheHint,
  type ClientCapabilities,
  type McpHttpHandler,
  type ServerCapabilities,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { GateContext } from '../contracts/gate.js';
import { declaresTasks, MODERN_VERSION, TASKS_EXTENSION } from '../mcp/index.js';
import { sessionSubject } from './auth.js';
import type { GatewayInbox } from './inbox.js';
import { challengeOf, type Exchange } from './stepup.js';
import { attachRound, mrtrRound, type MrtrInbox, type MrtrRound, type MrtrWho } from './mrtr.js';
import { requestHandlers, type GatewayCore, type GatewayRequestContext, type SessionRequest } from './session.js';
import { inputProblem, ownerKey, taskKeyOf } from './tasks.js';
import type { UpstreamInput } from './upstream.js';
import { declaredBy, logLevelOf, peer } from './modern-peer.js';
import { bindTaskHandlers, ownerOf, taskOrResult, type TaskRequests } from './modern-tasks.js';
import {
  bindable,
  openUpstreamState,
  stateKindOf,
  upstreamRoundBinding,
  wrapUpstreamState,
  type UpstreamRoundBinding,
} from './upstream-rounds.js';

/** This process's name in the ledger, as the claimer of a 2026-07-28 retry's call. */
const REPLICA = `${hostname()}:${process.pid}:${randomUUID()}`;

/** The gateway's inbox as a round asks it (without waiting), or null when it cannot be. */
function inboxFor(inbox: GatewayInbox): MrtrInbox | null {
  const { submit, get, link } = inbox;
  if (!submit || !get) return null;
  return { submit, get, link: (request) => link?.(request) };
}

/** The request-level `params` of a parsed JSON-RPC body, when it is one request. */
function paramsOf(body: unknown): unknown {
  return body !== null && typeof body === 'object' && !Array.isArray(body)
    ? (body as { params?: unknown }).params
    : undefined;
}

/** How long a 2026-07-28 client may keep a list or a read: short, and never shared with another caller. */
export const PRIVATE_TTL_MS = 5000;
const PRIVATE: CacheHint = { ttlMs: PRIVATE_TTL_MS, cacheScope: 'private' };

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
  const handler = createMcpHandler(
    ({ authInfo, requestInfo }) => {
      const exchange = requestInfo && exchanges.get(requestInfo);
      if (!exchange) throw new Error('toolgate gateway: a 2026-07-28 request outside its HTTP exchange; refused');
      return modernServer(core, context, authInfo, exchange);
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

/** One request's server: what it advertises is what this caller may use of what the upstreams offer. */
export function modernServer(
  core: GatewayCore,
  contextOption: () => GatewayRequestContext,
  authInfo: AuthInfo | undefined,
  exchange: Exchange,
): ModernServer {
  return bindModern(core, contextOption, authInfo, exchange, (capabilities) => {
    return new ModernServer(
      { name: core.name, version: '0.2.0' },
      {
        capabilities,
        cacheHints: {
          'server/discover': PRIVATE,
          'tools/list': PRIVATE,
          'resources/list': PRIVATE,
          'resources/templates/list': PRIVATE,
          'prompts/list': PRIVATE,
          'resources/read': PRIVATE,
        },
      },
    );
  });
}

/** What one request's handlers are set on: its SDK server, or the fast path's table (modern-fast.ts). */
export interface ModernHandlers {
  setRequestHandler: ModernServer['setRequestHandler'];
}

/**
 * Sets one request's handlers on what `make` gives for the capabilities this caller is shown: the SDK
 * server of {@link modernServer} or the fast path's table (same handlers, no SDK); `exchange` is the request's own.
 */
export function bindModern<S extends ModernHandlers>(
  core: GatewayCore,
  contextOption: () => GatewayRequestContext,
  authInfo: AuthInfo | undefined,
  exchange: Exchange,
  make: (capabilities: ServerCapabilities) => S,
): S {
  const option = contextOption();
  const caller: GateContext =
    typeof option === 'function' ? option({ authInfo: authInfo as never, sessionId: undefined }) : option;
  // The tasks extension: offered to a client that declared it, where an upstream offers it and the
  // gateway can bind a handle to its creator (the owner's secret).
  const secret = core.people.requestState?.secret;
  const tasksKey = secret !== undefined && exchange.tasks && offersTasks(core) ? taskKeyOf(secret) : undefined;
  const capabilities = capabilitiesFor(core, caller, tasksKey !== undefined);
  const server = make(capabilities);
  let current: ServerContext | undefined;
  /** The upstream round this request relays (set by `rounded` before its handler runs). */
  let relaying: UpstreamInput | undefined;
  // An upstream's request the client could not be sent (it has no server-to-client request): the call it
  // came from fails with -32021 naming it, whatever the upstream made of the refusal (the revision's rule).
  let undeclared: { what: string; declared: boolean } | undefined;
  const thePeer = peer(
    () => current,
    (what, declared) => (undeclared ??= { what, declared }),
  );
  const handlers = requestHandlers(core, contextOption, thePeer);
  // The round of an ask (input_required, then the retry): bound to the call, the caller, the policy in force.
  const inbox = core.people.inbox;
  const declaredOf = (ctx: ServerContext): ClientCapabilities => declaredBy(ctx);
  const whoOf = (ctx: ServerContext): MrtrWho => {
    const context = handlers.contextOf(of(ctx));
    return {
      subject: ctx.http?.authInfo ? sessionSubject(ctx.http.authInfo as never) : null,
      caller: context.caller?.id ?? null,
      tenant: context.tenant?.id ?? null,
      policyVersion: core.inForce.current.policy.version,
    };
  };
  /** The round of the gateway's own asks; a retry of an upstream's round (its wrapper) carries none of its state. */
  const roundFor = (ctx: ServerContext, who: MrtrWho, upstreams: boolean): MrtrRound => {
    const elicitation = declaredOf(ctx).elicitation as { form?: unknown; url?: unknown } | undefined;
    const round = mrtrRound({
      stores: core.people.requestState,
      replica: REPLICA,
      form: !!elicitation && !(elicitation.form === undefined && elicitation.url !== undefined),
      url: elicitation?.url !== undefined,
      ...(inbox ? { inbox: inboxFor(inbox) } : {}),
      requestState: upstreams ? undefined : ctx.mcpReq.requestState(),
      inputResponses: upstreams ? undefined : ctx.mcpReq.inputResponses,
      who,
    });
    attachRound(thePeer, round);
    return round;
  };
  /** A refusal of an upstream round's retry or answer: audited, a protocol error naming why. */
  const refusedRound = (code: number, reason: string, data?: Record<string, unknown>): ProtocolError => {
    core.audit({ type: 'protocol', time: new Date().toISOString(), reason });
    return new ProtocolError(code, reason, data);
  };
  /**
   * The upstream round a request relays: on a retry carrying the wrapper of an upstream's round, the
   * wrapper opened (the upstream's own state and the answers go back to it), else refused before anything
   * runs; a retry with answers and no state passes them on (an upstream that keeps no state).
   */
  const relayedInput = async (
    ctx: ServerContext,
    bound: () => UpstreamRoundBinding,
    upstreams: boolean,
  ): Promise<UpstreamInput> => {
    const declared = declaredOf(ctx) as Record<string, unknown>;
    const passed: Record<string, unknown> = {};
    for (const key of ['elicitation', 'sampling', 'roots'] as const)
      if (declared[key] !== undefined) passed[key] = declared[key];
    const responses = (ctx.mcpReq.inputResponses ?? {}) as Readonly<Record<string, unknown>>;
    if (!upstreams)
      return {
        given:
          ctx.mcpReq.inputResponses !== undefined && ctx.mcpReq.requestState() === undefined
            ? { upstream: undefined, requestState: undefined, inputResponses: responses }
            : null,
        declared: passed,
      };
    const stores = core.people.requestState;
    const opened = stores
      ? await openUpstreamState(stores, ctx.mcpReq.requestState(), bound())
      : { problem: 'the gateway has no approval secret set by its owner to open it' };
    if ('problem' in opened)
      throw refusedRound(
        ProtocolErrorCode.InvalidParams,
        `toolgate gateway: the requestState was refused: ${opened.problem}; nothing was sent upstream. Call again without it to be asked anew.`,
      );
    return {
      given: { upstream: opened.upstream, requestState: opened.state, inputResponses: responses },
      declared: passed,
    };
  };
  /**
   * Runs a handler under its round and answers: input_required when the ask asked; a protocol error naming
   * why when the retry's state or answers were refused (nothing ran); an upstream's own input_required
   * relayed (its state wrapped, its requests only as the client declared them); else the result (or the
   * handler's error), recorded in the ledger when the round claimed the call.
   */
  const rounded = async <T>(
    ctx: ServerContext,
    called: { method: 'tools/call' | 'resources/read' | 'prompts/get'; name: string; args: unknown },
    run: () => Promise<T>,
    finish = (r: T): T => r,
  ): Promise<T> => {
    const who = whoOf(ctx);
    const kind = stateKindOf(ctx.mcpReq.requestState());
    const upstreams = kind === 'upstream';
    let binding: UpstreamRoundBinding | undefined; // digested only when a round needs it (issue 25)
    const bound = () => (binding ??= upstreamRoundBinding(who, called.method, called.name, called.args));
    // Arguments the digest could not carry: digested now, so the call fails before it runs, as it always did.
    if (!bindable(called.args)) bound();
    const round = roundFor(ctx, who, upstreams);
    const input = await relayedInput(ctx, bound, upstreams);
    // Neither round's (an ask's round refuses it as its own; else the call is never sent upstream).
    if (kind === 'malformed') input.misrouted = 'it is malformed (not one the gateway issued, or changed)';
    relaying = input;
    const relayed = async (): Promise<T | undefined> => {
      if (input.misrouted !== undefined)
        throw refusedRound(
          ProtocolErrorCode.InvalidParams,
          `toolgate gateway: the requestState was refused: ${input.misrouted}; nothing was sent upstream`,
        );
      const asked = input.asked;
      if (asked === undefined) return undefined;
      const problem = inputProblem(asked.inputRequests, declaredOf(ctx) as Record<string, unknown>);
      const stores = core.people.requestState;
      if (problem !== undefined || !stores) {
        const reason = `toolgate gateway: upstream ${JSON.stringify(asked.upstream)} asked the client for ${
          problem
            ? problem.message
            : 'input, and the gateway has no approval secret set by its owner to bind its requestState'
        }; the call failed`;
        await round.settle({ content: reason, isError: true });
        throw refusedRound(
          problem?.code ?? ProtocolErrorCode.InternalError,
          reason,
          problem?.needs ? { requiredCapabilities: { [problem.needs]: {} } } : undefined,
        );
      }
      await round.settle({ content: 'input_required', isError: false });
      return inputRequired({
        inputRequests: asked.inputRequests,
        requestState: wrapUpstreamState(stores, bound(), asked.upstream, asked.requestState),
      } as never) as T;
    };
    let result: T;
    try {
      result = await run();
    } catch (error) {
      if (round.inputRequired) return inputRequired(round.inputRequired as never) as T;
      if (round.refused) throw new ProtocolError(ProtocolErrorCode.InvalidParams, round.refused);
      const answered = await relayed();
      if (answered !== undefined) return answered;
      await round.settle({ content: error instanceof Error ? error.message : String(error), isError: true });
      throw error;
    }
    if (round.inputRequired) return inputRequired(round.inputRequired as never) as T;
    if (round.refused) throw new ProtocolError(ProtocolErrorCode.InvalidParams, round.refused);
    const answered = await relayed();
    if (answered !== undefined) return answered;
    if (undeclared !== undefined) {
      const { what, declared } = undeclared;
      const reason = declared
        ? `toolgate gateway: the upstream asked the client for ${what}, which the gateway does not relay to a ${MODERN_VERSION} client yet; the call failed`
        : `toolgate gateway: the upstream asked the client for ${what}, which this request's clientCapabilities do not declare; the call failed`;
      core.audit({ type: 'protocol', time: new Date().toISOString(), reason });
      await round.settle({ content: reason, isError: true });
      // -32021 names what is missing as the schema has it: a ClientCapabilities object ({ sampling: {} }).
      if (!declared)
        throw new ProtocolError(ProtocolErrorCode.MissingRequiredClientCapability, reason, {
          requiredCapabilities: { [what]: {} },
        });
      throw new ProtocolError(ProtocolErrorCode.InternalError, reason);
    }
    const r = result as { isError?: unknown; content?: unknown; contents?: unknown; messages?: unknown };
    await round.settle({
      content: JSON.stringify(r.content ?? r.contents ?? r.messages ?? null).slice(0, 65_536),
      isError: r.isError === true,
    });
    return finish(result);
  };
  const of = (ctx: ServerContext): SessionRequest => {
    current = ctx;
    const level = logLevelOf(ctx);
    const request: SessionRequest = {
      ...(relaying ? { input: relaying } : {}),
      signal: ctx.mcpReq.signal,
      progressToken: ctx.mcpReq._meta?.progressToken,
      sendNotification: (notification) => ctx.mcpReq.notify(notification as never),
      authInfo: ctx.http?.authInfo as never,
      sessionId: undefined,
      tasks: tasksKey !== undefined,
      exchange,
      // The request's own log level, passed on as it came to a 2026-07-28 upstream (Relay.scopeOf).
      ...(level === undefined ? {} : { logLevel: level }),
    };
    // A request that takes tasks names its owner: whose the upstream's log lines may be (Relay.log).
    return tasksKey === undefined
      ? request
      : { ...request, owner: ownerKey(ownerOf(ctx, handlers.contextOf(request))) };
  };
  /** The tasks extension of this request (modern-tasks.ts), when it takes tasks. */
  const tasks: TaskRequests | undefined =
    tasksKey === undefined ? undefined : { core, key: tasksKey, peer: thePeer, of, contextOf: handlers.contextOf };
  // Results are the session handlers' (the SDK v1's types, the same JSON); the SDK adds resultType and the
  // cache fields. Only what the server advertises is served: another method is not found (-32601).
  if (capabilities.tools) {
    server.setRequestHandler('tools/list', async (_r, ctx) => (await handlers.listTools(of(ctx))) as never);
    server.setRequestHandler('tools/call', async (r, ctx) => {
      const called = async () => {
        const result = (await handlers.callTool(r.params as never, of(ctx))) as unknown as Record<string, unknown>;
        return tasks === undefined ? result : taskOrResult(tasks, result, r.params.name, r.params.arguments, ctx);
      };
      return (await rounded(
        ctx,
        { method: 'tools/call', name: r.params.name, args: r.params.arguments },
        called,
      )) as never;
    });
  }
  if (tasks !== undefined) bindTaskHandlers(server, tasks);
  if (capabilities.resources) {
    server.setRequestHandler(
      'resources/list',
      async (r, ctx) => (await handlers.listResources(r.params?.cursor, of(ctx))) as never,
    );
    server.setRequestHandler(
      'resources/templates/list',
      async (r, ctx) => (await handlers.listResourceTemplates(r.params?.cursor, of(ctx))) as never,
    );
    server.setRequestHandler('resources/read', async (r, ctx) => {
      const read = () => handlers.readResource(r.params as never, of(ctx)) as Promise<Record<string, unknown>>;
      return (await rounded(ctx, { method: 'resources/read', name: r.params.uri, args: {} }, read, privately)) as never;
    });
  }
  if (capabilities.prompts) {
    server.setRequestHandler(
      'prompts/list',
      async (r, ctx) => (await handlers.listPrompts(r.params?.cursor, of(ctx))) as never,
    );
    server.setRequestHandler('prompts/get', async (r, ctx) => {
      return (await rounded(ctx, { method: 'prompts/get', name: r.params.name, args: r.params.arguments }, () =>
        handlers.getPrompt(r.params as never, of(ctx)),
      )) as never;
    });
  }
  if (capabilities.completions)
    server.setRequestHandler(
      'completion/complete',
      async (r, ctx) => (await handlers.complete(r.params as never, of(ctx))) as never,
    );
  return server;
}

/**
 * A result the gateway relays (a read): private whatever the upstream said (the gate decided it for this
 * caller), fresh no longer than the upstream said nor than {@link PRIVATE_TTL_MS}.
 */
function privately(result: Record<string, unknown>): Record<string, unknown> {
  const upstream = typeof result['ttlMs'] === 'number' && result['ttlMs'] >= 0 ? result['ttlMs'] : PRIVATE_TTL_MS;
  return { ...result, ttlMs: Math.min(upstream, PRIVATE_TTL_MS), cacheScope: 'private' };
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
