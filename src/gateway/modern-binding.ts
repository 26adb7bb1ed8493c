/**
 * The 2026-07-28 handlers of the gateway's modern downstream (modern.ts, and its fast path modern-fast.ts),
 * bound once per modern handler: a request brings only its own state (a {@link ModernRequest}: its context,
 * the upstream round it relays, its peer and session handlers, its round of asks), never shared with
 * another request (issue 25: nothing the requests share is made again per request).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  inputRequired,
  ProtocolError,
  ProtocolErrorCode,
  type AuthInfo,
  type CacheHint,
  type Server as ModernServer,
  type ServerCapabilities,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolRequest, ReadResourceRequest } from '@modelcontextprotocol/sdk/types.js';
import type { GateContext } from '../contracts/gate.js';
import { boundAgentOf } from '../gate/index.js';
import { MODERN_VERSION } from '../mcp/index.js';
import { sessionSubject } from './auth.js';
import type { GatewayInbox } from './inbox.js';
import type { Exchange } from './stepup.js';
import { mrtrRound, type MrtrInbox, type MrtrRound, type MrtrWho } from './mrtr.js';
import { requestHandlers, type GatewayCore, type GatewayRequestContext, type SessionRequest } from './session.js';
import { inputProblem, ownerKey } from './tasks.js';
import type { UpstreamInput } from './upstream.js';
import { declaredBy, logLevelOf, peer, type PeerState } from './modern-peer.js';
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

/** How long a 2026-07-28 client may keep a list or a read: short, and never shared with another caller. */
export const PRIVATE_TTL_MS = 5000;
export const PRIVATE: CacheHint = Object.freeze({ ttlMs: PRIVATE_TTL_MS, cacheScope: 'private' });

/** What one request's handlers are set on: its SDK server. */
export interface ModernHandlers {
  setRequestHandler: ModernServer['setRequestHandler'];
}

/**
 * What one 2026-07-28 request holds of its own, and nothing else does: its handler context, the upstream
 * round it relays, an upstream's request it refused, its exchange, its peer ("the client's server") with the
 * session handlers bound to it, its round of asks. Made per request, never shared: one caller's request
 * never sees another's context, authentication or signal.
 */
export class ModernRequest implements PeerState {
  /** The request's handler context (set by {@link ModernBinding.of} as each handler runs). */
  current: ServerContext | undefined = undefined;
  /** The upstream round this request relays (set by `rounded` before its handler runs). */
  relaying: UpstreamInput | undefined = undefined;
  /**
   * An upstream's request the client could not be sent (it has no server-to-client request): the call it
   * came from fails with -32021 naming it, whatever the upstream made of the refusal (the revision's rule).
   */
  undeclared: { readonly what: string; readonly declared: boolean } | undefined = undefined;
  readonly exchange: Exchange;
  /** The key of the tasks extension's handles, when this request takes tasks. */
  readonly tasksKey: Uint8Array | undefined;
  readonly peer: Server;
  readonly handlers: ReturnType<typeof requestHandlers>;
  #makeRound: (() => MrtrRound) | undefined = undefined;
  #round: MrtrRound | undefined = undefined;

  constructor(binding: ModernBinding, exchange: Exchange, tasksKey: Uint8Array | undefined) {
    this.exchange = exchange;
    this.tasksKey = tasksKey;
    this.peer = peer(this);
    this.handlers = requestHandlers(binding.core, binding.contextOption, this.peer);
  }

  refused(what: 'sampling' | 'elicitation', declared: boolean): void {
    this.undeclared ??= { what, declared };
  }

  /** A round of asks begins (`rounded`): `make` makes it when something first asks for it. */
  begin(make: () => MrtrRound): void {
    this.#makeRound = make;
    this.#round = undefined;
  }

  /** The round of this request's asks (mrtr.ts roundOf), made at the first call; undefined outside a round. */
  round(): MrtrRound | undefined {
    if (this.#round === undefined && this.#makeRound !== undefined) this.#round = this.#makeRound();
    return this.#round;
  }

  /** Whether the request is in a round (`rounded` began one), made or not yet. */
  inRound(): boolean {
    return this.#makeRound !== undefined;
  }

  /** The round if something made it; else nothing asked, refused or claimed a call in it. */
  get made(): MrtrRound | undefined {
    return this.#round;
  }
}

/** What a handler of one request was asked to run, for its round's binding. */
interface Called {
  readonly method: 'tools/call' | 'resources/read' | 'prompts/get';
  readonly name: string;
  readonly args: unknown;
}

/**
 * The 2026-07-28 handlers of one modern handler (one per route), bound once: each request brings its own
 * {@link ModernRequest}, which is all they keep of it. The same handlers as the 2025-era sessions
 * (session.ts), so both eras get the same decisions.
 */
export class ModernBinding {
  readonly core: GatewayCore;
  readonly contextOption: () => GatewayRequestContext;

  constructor(core: GatewayCore, contextOption: () => GatewayRequestContext) {
    this.core = core;
    this.contextOption = contextOption;
  }

  /** The caller's context of a request with `authInfo`, as the gateway's option gives it now. */
  callerOf(authInfo: AuthInfo | undefined): GateContext {
    const option = this.contextOption();
    return typeof option === 'function' ? option({ authInfo: authInfo as never, sessionId: undefined }) : option;
  }

  /** The session request of a handler's context (`ctx` becomes the request's current one). */
  of(state: ModernRequest, ctx: ServerContext): SessionRequest {
    state.current = ctx;
    const level = logLevelOf(ctx);
    // Its optional parts set after, not spread (V8's slow define path for a spread in a literal; copies.ts).
    const request: { -readonly [K in keyof SessionRequest]: SessionRequest[K] } = {
      signal: ctx.mcpReq.signal,
      progressToken: ctx.mcpReq._meta?.progressToken,
      sendNotification: (notification) => ctx.mcpReq.notify(notification as never),
      authInfo: ctx.http?.authInfo as never,
      sessionId: undefined,
      tasks: state.tasksKey !== undefined,
      exchange: state.exchange,
    };
    if (state.relaying) request.input = state.relaying;
    // The request's own log level, passed on as it came to a 2026-07-28 upstream (Relay.scopeOf).
    if (level !== undefined) request.logLevel = level;
    // A request that takes tasks names its owner: whose the upstream's log lines may be (Relay.log).
    if (state.tasksKey !== undefined) request.owner = ownerKey(ownerOf(ctx, state.handlers.contextOf(request)));
    return request;
  }

  /** Who a round of `ctx` binds its asks to: the subject, the caller, the tenant, the policy in force now. */
  #whoOf(state: ModernRequest, ctx: ServerContext): MrtrWho {
    state.current = ctx;
    const authInfo = ctx.http?.authInfo;
    const context = state.handlers.contextOf({ authInfo: authInfo as never, sessionId: undefined });
    return {
      subject: authInfo ? sessionSubject(authInfo as never) : null,
      caller: context.caller?.id ?? null,
      agent: boundAgentOf(context),
      tenant: context.tenant?.id ?? null,
      policyVersion: this.core.inForce.current.policy.version,
    };
  }

  /** The round of the gateway's own asks; a retry of an upstream's round (its wrapper) carries none of its state. */
  #roundFor(ctx: ServerContext, who: MrtrWho, upstreams: boolean): MrtrRound {
    const elicitation = declaredBy(ctx).elicitation as { form?: unknown; url?: unknown } | undefined;
    const inbox = this.core.people.inbox;
    return mrtrRound({
      stores: this.core.people.requestState,
      replica: REPLICA,
      form: !!elicitation && !(elicitation.form === undefined && elicitation.url !== undefined),
      url: elicitation?.url !== undefined,
      ...(inbox ? { inbox: inboxFor(inbox) } : {}),
      requestState: upstreams ? undefined : ctx.mcpReq.requestState(),
      inputResponses: upstreams ? undefined : ctx.mcpReq.inputResponses,
      who,
    });
  }

  /** A refusal of an upstream round's retry or answer: audited, a protocol error naming why. */
  #refusedRound(code: number, reason: string, data?: Record<string, unknown>): ProtocolError {
    this.core.audit({ type: 'protocol', time: new Date().toISOString(), reason });
    return new ProtocolError(code, reason, data);
  }

  /**
   * The upstream round a request relays: on a retry carrying the wrapper of an upstream's round, the
   * wrapper opened (the upstream's own state and the answers go back to it), else refused before anything
   * runs; a retry with answers and no state passes them on (an upstream that keeps no state).
   */
  async #relayedInput(
    ctx: ServerContext,
    bound: () => UpstreamRoundBinding,
    upstreams: boolean,
  ): Promise<UpstreamInput> {
    const declared = declaredBy(ctx) as Record<string, unknown>;
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
    const stores = this.core.people.requestState;
    const opened = stores
      ? await openUpstreamState(stores, ctx.mcpReq.requestState(), bound())
      : { problem: 'the gateway has no approval secret set by its owner to open it' };
    if ('problem' in opened)
      throw this.#refusedRound(
        ProtocolErrorCode.InvalidParams,
        `toolgate gateway: the requestState was refused: ${opened.problem}; nothing was sent upstream. Call again without it to be asked anew.`,
      );
    return {
      given: { upstream: opened.upstream, requestState: opened.state, inputResponses: responses },
      declared: passed,
    };
  }

  /**
   * Runs a handler of `state`'s request under its round and answers: input_required when the ask asked; a
   * protocol error naming why when the retry's state or answers were refused (nothing ran); an upstream's
   * own input_required relayed (its state wrapped, its requests only as the client declared them); else
   * the result (or the handler's error), recorded in the ledger when the round claimed the call.
   */
  async rounded<T>(
    state: ModernRequest,
    ctx: ServerContext,
    called: Called,
    run: () => Promise<T>,
    finish = (r: T): T => r,
  ): Promise<T> {
    const core = this.core;
    const who = this.#whoOf(state, ctx);
    const kind = stateKindOf(ctx.mcpReq.requestState());
    const upstreams = kind === 'upstream';
    let binding: UpstreamRoundBinding | undefined; // digested only when a round needs it (issue 25)
    const bound = () => (binding ??= upstreamRoundBinding(who, called.method, called.name, called.args));
    // Arguments the digest could not carry: digested now, so the call fails before it runs, as it always did.
    if (!bindable(called.args)) bound();
    // The round is made when something first asks for it (an ask, a step-up, the answer of a claimed call).
    state.begin(() => this.#roundFor(ctx, who, upstreams));
    const input = await this.#relayedInput(ctx, bound, upstreams);
    // Neither round's (an ask's round refuses it as its own; else the call is never sent upstream).
    if (kind === 'malformed') input.misrouted = 'it is malformed (not one the gateway issued, or changed)';
    state.relaying = input;
    const relayed = async (): Promise<T | undefined> => {
      if (input.misrouted !== undefined)
        throw this.#refusedRound(
          ProtocolErrorCode.InvalidParams,
          `toolgate gateway: the requestState was refused: ${input.misrouted}; nothing was sent upstream`,
        );
      const asked = input.asked;
      if (asked === undefined) return undefined;
      const problem = inputProblem(asked.inputRequests, declaredBy(ctx) as Record<string, unknown>);
      const stores = core.people.requestState;
      if (problem !== undefined || !stores) {
        const reason = `toolgate gateway: upstream ${JSON.stringify(asked.upstream)} asked the client for ${
          problem
            ? problem.message
            : 'input, and the gateway has no approval secret set by its owner to bind its requestState'
        }; the call failed`;
        await state.made?.settle({ content: reason, isError: true });
        throw this.#refusedRound(
          problem?.code ?? ProtocolErrorCode.InternalError,
          reason,
          problem?.needs ? { requiredCapabilities: { [problem.needs]: {} } } : undefined,
        );
      }
      await state.made?.settle({ content: 'input_required', isError: false });
      return inputRequired({
        inputRequests: asked.inputRequests,
        requestState: wrapUpstreamState(stores, bound(), asked.upstream, asked.requestState),
      } as never) as T;
    };
    let result: T;
    try {
      result = await run();
    } catch (error) {
      const round = state.made;
      if (round?.inputRequired) return inputRequired(round.inputRequired as never) as T;
      if (round?.refused) throw new ProtocolError(ProtocolErrorCode.InvalidParams, round.refused);
      const answered = await relayed();
      if (answered !== undefined) return answered;
      await state.made?.settle({ content: error instanceof Error ? error.message : String(error), isError: true });
      throw error;
    }
    const round = state.made;
    if (round?.inputRequired) return inputRequired(round.inputRequired as never) as T;
    if (round?.refused) throw new ProtocolError(ProtocolErrorCode.InvalidParams, round.refused);
    const answered = await relayed();
    if (answered !== undefined) return answered;
    const undeclared = state.undeclared;
    if (undeclared !== undefined) {
      const { what, declared } = undeclared;
      const reason = declared
        ? `toolgate gateway: the upstream asked the client for ${what}, which the gateway does not relay to a ${MODERN_VERSION} client yet; the call failed`
        : `toolgate gateway: the upstream asked the client for ${what}, which this request's clientCapabilities do not declare; the call failed`;
      core.audit({ type: 'protocol', time: new Date().toISOString(), reason });
      await state.made?.settle({ content: reason, isError: true });
      // -32021 names what is missing as the schema has it: a ClientCapabilities object ({ sampling: {} }).
      if (!declared)
        throw new ProtocolError(ProtocolErrorCode.MissingRequiredClientCapability, reason, {
          requiredCapabilities: { [what]: {} },
        });
      throw new ProtocolError(ProtocolErrorCode.InternalError, reason);
    }
    // A round nothing made claimed no call: there is no answer to record (nor its content to serialise).
    const made = state.made;
    if (made !== undefined) {
      const r = result as { isError?: unknown; content?: unknown; contents?: unknown; messages?: unknown };
      await made.settle({
        content: JSON.stringify(r.content ?? r.contents ?? r.messages ?? null).slice(0, 65_536),
        isError: r.isError === true,
      });
    }
    return finish(result);
  }

  /** `tools/call` of `state`'s request (the fast path's too: modern-fast.ts). */
  callTool(state: ModernRequest, params: CallToolRequest['params'], ctx: ServerContext): Promise<unknown> {
    const called = async () => {
      const result = (await state.handlers.callTool(params, this.of(state, ctx))) as unknown as Record<string, unknown>;
      return state.tasksKey === undefined
        ? result
        : taskOrResult(this.#tasks(state), result, params.name, params.arguments, ctx);
    };
    return this.rounded(state, ctx, { method: 'tools/call', name: params.name, args: params.arguments }, called);
  }

  /** `resources/read` of `state`'s request (the fast path's too), its result private. */
  readResource(state: ModernRequest, params: ReadResourceRequest['params'], ctx: ServerContext): Promise<unknown> {
    const read = () => state.handlers.readResource(params, this.of(state, ctx)) as Promise<Record<string, unknown>>;
    return this.rounded(state, ctx, { method: 'resources/read', name: params.uri, args: {} }, read, privately);
  }

  /** The tasks extension of `state`'s request (modern-tasks.ts), which takes tasks. */
  #tasks(state: ModernRequest): TaskRequests {
    return {
      core: this.core,
      key: state.tasksKey!,
      peer: state.peer,
      of: (ctx) => this.of(state, ctx),
      contextOf: (request) => state.handlers.contextOf(request),
    };
  }

  /**
   * Sets `state`'s handlers on its request's SDK server, for the capabilities this caller is shown. Results
   * are the session handlers' (the SDK v1's types, the same JSON); the SDK adds resultType and the cache
   * fields. Only what the server advertises is served: another method is not found (-32601).
   */
  bind(server: ModernHandlers, state: ModernRequest, capabilities: ServerCapabilities): void {
    const { handlers } = state;
    if (capabilities.tools) {
      server.setRequestHandler(
        'tools/list',
        async (_r, ctx) => (await handlers.listTools(this.of(state, ctx))) as never,
      );
      server.setRequestHandler(
        'tools/call',
        async (r, ctx) => (await this.callTool(state, r.params as CallToolRequest['params'], ctx)) as never,
      );
    }
    if (state.tasksKey !== undefined) bindTaskHandlers(server, this.#tasks(state));
    if (capabilities.resources) {
      server.setRequestHandler(
        'resources/list',
        async (r, ctx) => (await handlers.listResources(r.params?.cursor, this.of(state, ctx))) as never,
      );
      server.setRequestHandler(
        'resources/templates/list',
        async (r, ctx) => (await handlers.listResourceTemplates(r.params?.cursor, this.of(state, ctx))) as never,
      );
      server.setRequestHandler(
        'resources/read',
        async (r, ctx) => (await this.readResource(state, r.params as ReadResourceRequest['params'], ctx)) as never,
      );
    }
    if (capabilities.prompts) {
      server.setRequestHandler(
        'prompts/list',
        async (r, ctx) => (await handlers.listPrompts(r.params?.cursor, this.of(state, ctx))) as never,
      );
      server.setRequestHandler('prompts/get', async (r, ctx) => {
        return (await this.rounded(
          state,
          ctx,
          { method: 'prompts/get', name: r.params.name, args: r.params.arguments },
          () => handlers.getPrompt(r.params as never, this.of(state, ctx)),
        )) as never;
      });
    }
    if (capabilities.completions)
      server.setRequestHandler(
        'completion/complete',
        async (r, ctx) => (await handlers.complete(r.params as never, this.of(state, ctx))) as never,
      );
  }

  /** Whether a caller of `context` is shown tools (the fast path's tools/call), as {@link capabilitiesFor} says. */
  showsTools(context: GateContext): boolean {
    return this.core.registry.allowlist(context).names.length > 0;
  }

  /** Whether a ready upstream offers `key`, as {@link capabilitiesFor} says (the fast path's resources/read). */
  offers(key: keyof ServerCapabilities): boolean {
    for (const upstream of this.core.router.upstreams.values())
      if (upstream.state === 'ready' && upstream.capabilities[key] !== undefined) return true;
    return false;
  }
}

/**
 * A result the gateway relays (a read): private whatever the upstream said (the gate decided it for this
 * caller), fresh no longer than the upstream said nor than {@link PRIVATE_TTL_MS}.
 */
function privately(result: Record<string, unknown>): Record<string, unknown> {
  const upstream = typeof result['ttlMs'] === 'number' && result['ttlMs'] >= 0 ? result['ttlMs'] : PRIVATE_TTL_MS;
  return { ...result, ttlMs: Math.min(upstream, PRIVATE_TTL_MS), cacheScope: 'private' };
}
