/**
 * The gateway's MCP client to one upstream (the SDK v2 Client): forwards a downstream request's progress
 * token, tells a modern upstream what the client declared (tasks, input capabilities) and relays its own
 * input rounds, and marks a call sent upstream that got no answer as of unknown outcome. The connection's
 * lifecycle (connect, list, reconnect) is upstream.ts's; this file is what one request does on it.
 */
import {
  Client,
  LOG_LEVEL_META_KEY,
  SdkError,
  SdkErrorCode,
  type CallToolRequest,
  type CallToolRequestOptions,
  type CallToolResult,
  type ClientCapabilities,
  type LoggingLevel,
  type ProgressToken,
  type Request,
  type RequestMethod,
  type RequestOptions,
  type ResultTypeMap,
  type StandardSchemaV1,
  type Tool as McpTool,
} from '@modelcontextprotocol/client';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  clientOptions,
  MODERN_VERSION,
  TASKS_EXTENSION,
  upstreamTaskOf,
  type McpSession,
  type UpstreamTask,
} from '../mcp/index.js';
import { RawRequests, type ModernWire, type RawOptions } from './upstream-raw.js';
import { RawHttpTransport } from './upstream-raw-http.js';
import { asIs, modernWire, sendsNoHeaders, withoutClientEnvelope } from './upstream-raw-modern.js';

/** A Standard Schema that takes any JSON object as it came; anything else is refused with `message`. */
export function objectSchema(message: string) {
  return {
    '~standard': {
      version: 1,
      vendor: 'toolgate',
      validate: (value: unknown) =>
        value !== null && typeof value === 'object' && !Array.isArray(value)
          ? { value: value as Record<string, unknown> }
          : { issues: [{ message }] },
    },
  } as const;
}

/** What the client needs of the upstream it belongs to (upstream.ts's Upstream). */
export interface ClientUpstream {
  readonly namespace: string;
  readonly options: { readonly callTimeoutMs?: number; readonly stdio?: unknown; readonly transport?: unknown };
  readonly session: McpSession | null;
  readonly offersTasks: boolean;
  forward<T>(scope: CallScope | undefined, request: (scope: CallScope | undefined) => Promise<T>): Promise<T>;
  relayProgress(scope: CallScope): { readonly id: string; done(): void };
  requestOptions(scope: CallScope | undefined, options?: RequestOptions): RequestOptions;
  /** The upstream created a task for the request `scope` is of (tracked as unfinished: task-owners.ts). */
  taskCreated(task: UpstreamTask, scope: CallScope | undefined): void;
}

/** The downstream request an upstream request was made for (progress, sampling and logging go back there). */
export interface CallScope {
  readonly server: Server;
  readonly progressToken: ProgressToken | undefined;
  readonly sendNotification: (notification: {
    method: 'notifications/progress';
    params: Record<string, unknown>;
  }) => Promise<void>;
  /** The upstream's own result of the call, kept so that an error result is forwarded as the upstream gave it. */
  result?: CallToolResult;
  /**
   * Who a task the request creates belongs to (task-owners.ts's ownerKey of a 2026-07-28 request that
   * takes tasks), absent for any other request: whose the upstream's log lines may be (Relay.log).
   */
  readonly owner?: string;
  /**
   * The log level the downstream request asked for (a 2026-07-28 request's own, or the level a 2025-era
   * client set): every request to a 2026-07-28 upstream in this scope carries it in its `_meta`
   * (`io.modelcontextprotocol/logLevel`); absent, none is carried and the upstream sends no line.
   */
  readonly logLevel?: LoggingLevel;
  /**
   * The downstream request takes a task (see RelayedRequest.tasks): a modern upstream that offers the
   * extension is told so on this call, and may answer with a task (its `CreateTaskResult`, read by
   * `upstreamTaskOf` from the result). @default false
   */
  readonly tasks?: boolean;
  /**
   * Set when the call was sent upstream and no answer came back (it timed out, or was stopped while the
   * upstream ran it): the upstream may have completed it, so its outcome is unknown (issue 22).
   */
  unanswered?: string;
  /**
   * The upstream's own rounds of a 2026-07-28 request (multi round-trip requests): set, a modern upstream
   * may answer `input_required`, which is kept here for the gateway to relay (the call returns a stand-in
   * error result), and the retry's answers and the upstream's own state go back to it.
   */
  readonly input?: UpstreamInput;
  /**
   * The downstream request came by the gateway's fast path (fastpath.ts, http-fast.ts): to a 2025-era stdio
   * or HTTP upstream the call is sent raw (upstream-raw.ts, upstream-raw-http.ts) instead of through the SDK
   * Client. @default false
   */
  readonly raw?: boolean;
}

/** An upstream's own input round, as one 2026-07-28 request relays it (mrtr.ts wraps and opens its state). */
export interface UpstreamInput {
  /** What the client's retry gives back: the upstream it is for, the upstream's own state, the answers. */
  readonly given: {
    readonly upstream: string | undefined;
    readonly requestState: string | undefined;
    readonly inputResponses: Readonly<Record<string, unknown>>;
  } | null;
  /** What of elicitation, sampling and roots the client declared (passed on, so the upstream asks only for those). */
  readonly declared: Readonly<Record<string, unknown>>;
  /** Set by the call: the upstream answered `input_required`. */
  asked?: {
    readonly upstream: string;
    readonly inputRequests: Record<string, unknown>;
    readonly requestState: string | undefined;
  };
  /**
   * Why the retry's state cannot go upstream (malformed, or for another upstream than the one the call went
   * to): set, nothing is sent.
   */
  misrouted?: string;
}

/** The client capabilities an upstream's input requests need (MRTR's three). */
const INPUT_CAPABILITIES = ['elicitation', 'sampling', 'roots'] as const;

/**
 * The scope of each tool call in flight, by the call id the gateway gave it (calls.ts's `mcp-<uuid>`): the gate
 * hands the id to the tool it runs (`ToolExecution.callId`), the tool to the client (mcp/tools.ts passes it
 * as `callId` in the request options), and {@link GatewayClient.callTool} takes the scope by it. Passed
 * explicitly, not in async-local storage: on Node 20 a store ever entered turns on promise hooks for the whole
 * process (a 3-await chain 131 ns without, 350–454 ns with; issue 25).
 */
const toolCalls = new Map<string, CallScope>();

/**
 * Makes `scope` the scope of the call `callId` (the gate's dispatch of one tool call) until
 * {@link leaveCallScope}; the id is the gateway's own (random, never a client's), one scope per id while it
 * runs. Fail closed: an id already in flight throws, and the caller runs nothing. Two plain calls around the
 * caller's own await, not a wrapper taking the dispatch as a callback: that cost two async frames and four
 * promise hops on every answer's way back (issue 25.2).
 */
export function enterCallScope(callId: string, scope: CallScope): void {
  if (toolCalls.has(callId)) throw new Error(`toolgate gateway: the call id ${JSON.stringify(callId)} is in flight`);
  toolCalls.set(callId, scope);
}

/** The call `callId` has settled: its scope is no longer found by the call's id. */
export function leaveCallScope(callId: string): void {
  toolCalls.delete(callId);
}

/** The request options a tool hands the client (mcp/tools.ts): the gate's call id besides the SDK's own. */
export interface ToolCallOptions extends CallToolRequestOptions {
  readonly callId?: string;
}

/** Where request options carry the scope of the downstream request they were made for (Upstream.requestOptions). */
export const SCOPE: unique symbol = Symbol('toolgate.callScope');

/** Request options towards an upstream, with the scope of the downstream request they serve. */
export interface ScopedRequestOptions extends RequestOptions {
  readonly [SCOPE]?: CallScope | undefined;
}

/** The scope request options were made for (undefined: a request of the gateway's own, in no downstream request). */
function scopeOf(options: RequestOptions | undefined): CallScope | undefined {
  return (options as ScopedRequestOptions | undefined)?.[SCOPE];
}

type CallToolParams = CallToolRequest['params'];

/** The upstream's client: forwards the downstream's progress token and tracks which client a call is for. */
export class GatewayClient extends Client {
  readonly #upstream: ClientUpstream;
  /** What the gateway declares of itself to every upstream (a call that takes a task adds the extension). */
  readonly declared: ClientCapabilities;
  /** The fast path's requests on this connection (their answers are taken off the wire by upstream.ts's tap). */
  readonly raw: RawRequests;
  /** A 2026-07-28 raw request's envelope and result reading: this Client's own (upstream-raw-modern.ts). */
  readonly #modern: ModernWire;
  constructor(upstream: ClientUpstream, capabilities: ClientCapabilities, probeTimeoutMs: number) {
    super({ name: 'toolgate-gateway', version: '0.2.0' }, clientOptions(capabilities, probeTimeoutMs));
    this.#upstream = upstream;
    this.declared = capabilities;
    this.raw = new RawRequests(() => this.transport);
    this.#modern = modernWire({ envelope: () => this._outboundMetaEnvelope(), codec: () => this._wireCodec() });
  }

  /**
   * Whether a `tools/call` (its definition) or `resources/read` (`null`) in `scope` goes raw to a 2026-07-28
   * upstream (upstream-raw-modern.ts): the upstream is one over Streamable HTTP through the gateway's own
   * transport (a stream per request), the call is a first round of a 2026-07-28 request (its input rounds
   * relayed, taken manually: no retry material, nothing misrouted) that takes no task, and the SDK would send
   * it as it is (a definition that declares no `x-mcp-header`, a name or URI that needs no encoding:
   * upstream-raw-modern.ts's asIs). Anything else is the SDK's.
   */
  #rawModern(
    scope: CallScope | undefined,
    definition: McpTool | null | undefined,
    tasks: boolean,
    name: string,
  ): boolean {
    const input = scope?.input;
    const transport = this.transport;
    return (
      definition !== undefined &&
      (definition === null || sendsNoHeaders(definition)) &&
      !tasks &&
      input !== undefined &&
      input.given === null &&
      input.misrouted === undefined &&
      this.#upstream.session?.era === 'modern' &&
      this.#upstream.options.transport === undefined &&
      transport instanceof RawHttpTransport &&
      transport.hasPerRequestStream === true &&
      this.getNegotiatedProtocolVersion() === MODERN_VERSION &&
      asIs(name)
    );
  }

  /**
   * Whether a request in `scope` goes raw: it came by the fast path, and the upstream is a 2025-era server
   * over stdio or over Streamable HTTP through the gateway's own transport (upstream-raw-http.ts); a
   * 2026-07-28 request carries the SDK's per-request envelope, a transport given by the embedder is its own.
   */
  #raw(scope: CallScope | undefined): boolean {
    return (
      scope?.raw === true &&
      scope.input === undefined &&
      this.#upstream.session?.era === 'legacy' &&
      this.#upstream.options.transport === undefined &&
      (this.#upstream.options.stdio !== undefined || this.transport instanceof RawHttpTransport)
    );
  }

  /**
   * `params` with the log level of `scope` in its `_meta`, towards a 2026-07-28 upstream (the revision's
   * per-request level; a 2025-era upstream was told by `logging/setLevel`); as they are otherwise.
   */
  #leveled<P extends { _meta?: Record<string, unknown> | undefined }>(params: P, scope: CallScope | undefined): P {
    const level = scope?.logLevel;
    if (this.#upstream.session?.era !== 'modern') return params;
    if (level !== undefined) return { ...params, _meta: { ...params._meta, [LOG_LEVEL_META_KEY]: level } };
    // No level the gateway chose: none sent, whatever the params carried.
    const { [LOG_LEVEL_META_KEY]: dropped, ...meta } = params._meta ?? {};
    return dropped === undefined ? params : { ...params, _meta: meta };
  }

  /**
   * Every request the SDK Client sends in a downstream request's scope (its options made by
   * `Upstream.requestOptions`) carries that request's log level to a 2026-07-28 upstream: calls, reads,
   * prompts, completions, lists, subscriptions, the tasks extension's requests alike.
   */
  override request<M extends RequestMethod>(
    request: { method: M; params?: Record<string, unknown> },
    options?: RequestOptions,
  ): Promise<ResultTypeMap[M]>;
  override request<T extends StandardSchemaV1>(
    request: Request,
    resultSchema: T,
    options?: RequestOptions,
  ): Promise<StandardSchemaV1.InferOutput<T>>;
  override request(
    request: Request,
    schemaOrOptions?: StandardSchemaV1 | RequestOptions,
    maybeOptions?: RequestOptions,
  ): Promise<unknown> {
    const options =
      maybeOptions ??
      (schemaOrOptions !== undefined && !('~standard' in schemaOrOptions) ? schemaOrOptions : undefined);
    const params: { _meta?: Record<string, unknown> | undefined } = request.params ?? {};
    const leveled = this.#leveled(params, scopeOf(options));
    const sent = leveled === params ? request : { ...request, params: leveled };
    return maybeOptions === undefined
      ? super.request(sent as { method: RequestMethod }, schemaOrOptions as RequestOptions | undefined)
      : super.request(sent, schemaOrOptions as StandardSchemaV1, maybeOptions);
  }

  /**
   * The `_meta` of a request that declares the tasks extension (SEP-2663: per request, in its client
   * capabilities), merged over `meta`; the SDK's own envelope gives way to a request's `_meta`.
   */
  withTasks(meta: Record<string, unknown> | undefined): Record<string, unknown> {
    return {
      ...meta,
      'io.modelcontextprotocol/clientCapabilities': {
        ...this.declared,
        extensions: { ...this.declared.extensions, [TASKS_EXTENSION]: {} },
      },
    };
  }

  /**
   * `params` as a modern upstream is sent them in a request that relays its rounds: the client's declared
   * input capabilities in place of the gateway's, and on a retry the upstream's own state and the answers.
   * A retry whose state is for another upstream is not sent (the request fails, `misrouted` says why).
   */
  #withInput<P extends object>(params: P, input: UpstreamInput | undefined): P {
    if (input?.misrouted !== undefined) throw new Error(`toolgate gateway: ${input.misrouted}; nothing was sent`);
    if (!input || this.#upstream.session?.era !== 'modern') return params;
    const given = input.given;
    if (given && given.upstream !== undefined && given.upstream !== this.#upstream.namespace) {
      input.misrouted = `the requestState is for upstream ${JSON.stringify(given.upstream)}, not ${JSON.stringify(this.#upstream.namespace)}`;
      throw new Error(`toolgate gateway: ${input.misrouted}; nothing was sent`);
    }
    const own: Record<string, unknown> = { ...this.declared };
    for (const key of INPUT_CAPABILITIES) delete own[key];
    const had = (params as { _meta?: Record<string, unknown> })._meta;
    const meta = had?.['io.modelcontextprotocol/clientCapabilities'] as Record<string, unknown> | undefined;
    return {
      ...params,
      _meta: { ...had, 'io.modelcontextprotocol/clientCapabilities': { ...own, ...meta, ...input.declared } },
      ...(given
        ? {
            inputResponses: given.inputResponses,
            ...(given.requestState === undefined ? {} : { requestState: given.requestState }),
          }
        : {}),
    };
  }

  /** Keeps an upstream's `input_required` for the gateway to relay; anything else as it came. */
  #answered<T>(result: T, input: UpstreamInput | undefined, standIn: T): T {
    const r = result as { resultType?: unknown; inputRequests?: unknown; requestState?: unknown };
    if (r?.resultType !== 'input_required') return result;
    if (!input || r.inputRequests === null || typeof r.inputRequests !== 'object' || Array.isArray(r.inputRequests))
      throw new Error(`upstream "${this.#upstream.namespace}" answered input_required the call cannot relay`);
    input.asked = {
      upstream: this.#upstream.namespace,
      inputRequests: r.inputRequests as Record<string, unknown>,
      requestState: typeof r.requestState === 'string' ? r.requestState : undefined,
    };
    return standIn;
  }

  /**
   * What a raw request reads of the request options `Upstream.requestOptions` would make: the upstream's
   * timeout and the call's signal (made directly: that spread of the tool's options and the scope was the
   * costliest step of sending a call raw).
   */
  #rawOptions(signal: AbortSignal | undefined): RawOptions {
    const timeout = this.#upstream.options.callTimeoutMs ?? 60_000;
    return signal === undefined ? { timeout } : { timeout, signal };
  }

  override readResource(
    given: Parameters<Client['readResource']>[0],
    options?: RequestOptions,
  ): ReturnType<Client['readResource']> {
    const params = withoutClientEnvelope(given);
    const scope = scopeOf(options);
    const input = scope?.input;
    if (this.#raw(scope)) return this.raw.readResource({ ...params }, options ?? {});
    // The Client's read cache never holds a read here (mcp/client.ts's ToolIndexStore keeps only tools/list):
    // every read is a round trip, which a first round may make raw.
    if (this.#rawModern(scope, null, false, params.uri))
      return this.raw
        .readResource(this.#leveled(this.#withInput(params, input), scope), options ?? {}, this.#modern)
        .then((r) => this.#answered(r, input, { contents: [] }));
    return super
      .readResource(this.#withInput(params, input), options)
      .then((r) => this.#answered(r, input, { contents: [] }));
  }

  override getPrompt(
    params: Parameters<Client['getPrompt']>[0],
    options?: RequestOptions,
  ): ReturnType<Client['getPrompt']> {
    const input = scopeOf(options)?.input;
    return super
      .getPrompt(this.#withInput(withoutClientEnvelope(params), input), options)
      .then((r) => this.#answered(r, input, { messages: [] }));
  }

  override complete(
    params: Parameters<Client['complete']>[0],
    options?: RequestOptions,
  ): ReturnType<Client['complete']> {
    return super.complete(withoutClientEnvelope(params), options);
  }

  override callTool(params: CallToolParams, options?: ToolCallOptions): Promise<CallToolResult> {
    // The scope of the gate's call this is (its id from the tool): a call with none is outside any request
    // of a client's, and is refused (fail closed: never sent on no one's behalf, nor on another's).
    const id = options?.callId;
    const called = id === undefined ? undefined : toolCalls.get(id);
    if (called === undefined)
      return Promise.reject(
        new Error(
          `toolgate gateway: a call of ${JSON.stringify(params.name)} to upstream "${this.#upstream.namespace}" outside a client's request; refused, nothing was sent`,
        ),
      );
    return this.#upstream.forward(called, async (scope) => {
      const token = scope?.progressToken !== undefined ? this.#upstream.relayProgress(scope) : undefined;
      // The request leaves for the upstream now; an answer (a result, or a JSON-RPC error: McpError) makes
      // its outcome known. No answer — a timeout (a cancellation is sent), or the call stopped by the gate's
      // tool timeout or the client while the upstream ran it — leaves it unknown: the upstream may have
      // completed it, and "cancelled upstream" made a model retry it and run it twice (issue 22). Set
      // synchronously on abort, before the gate's own timeout result reaches the gateway.
      const signal = options?.signal;
      const stopped = (): void => {
        if (scope && scope.result === undefined)
          scope.unanswered ??= unansweredText(
            this.#upstream.namespace,
            'was still running the call when it was stopped',
          );
      };
      signal?.addEventListener('abort', stopped, { once: true });
      try {
        const own = withoutClientEnvelope(params);
        const withToken = token ? { ...own, _meta: { ...own._meta, progressToken: token.id } } : own;
        // Told that the client takes tasks only for a request that does, and only a modern upstream that
        // offers them (the extension does not exist in 2025-11-25).
        const tasks = scope?.tasks === true && this.#upstream.offersTasks;
        const sent = this.#withInput(
          tasks ? { ...withToken, _meta: this.withTasks(withToken._meta) } : withToken,
          scope?.input,
        );
        const definition = options?.toolDefinition;
        const result = this.#answered(
          await (definition !== undefined && this.#raw(scope)
            ? this.raw.callTool(sent, definition, this.#rawOptions(signal))
            : this.#rawModern(scope, definition, tasks, sent.name)
              ? this.raw.callTool(
                  this.#leveled(sent, scope),
                  definition!,
                  this.#upstream.requestOptions(scope, options),
                  this.#modern,
                )
              : super.callTool(sent, this.#upstream.requestOptions(scope, options))),
          scope?.input,
          {
            isError: true,
            content: [{ type: 'text', text: 'toolgate: the upstream asked for input; relayed to the client' }],
          } as CallToolResult,
        );
        const task = upstreamTaskOf(result);
        if (task !== undefined) {
          // Tracked at once, while the creating request is still in flight: the task may log on its own now.
          this.#upstream.taskCreated(task, scope);
          // Only a request that declared the extension can get one (the era check refuses it otherwise);
          // handed on as a success carrying the task (the gateway answers the client's task handle).
          if (!tasks) throw new Error(`upstream "${this.#upstream.namespace}" created a task the call did not take`);
          const created = { content: [], _meta: result._meta } as CallToolResult;
          if (scope) scope.result = created;
          return created;
        }
        if (scope) scope.result = result;
        return result;
      } catch (error) {
        // A stopped call (the client, the gate's timeout, the gateway closing) rejects as a RequestTimeout too:
        // its `stopped` reason stands, not a timeout that never ran out.
        if (signal?.aborted === true && scope?.unanswered) throw new Error(scope.unanswered);
        if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
          const ms = this.#upstream.options.callTimeoutMs ?? 60_000;
          const text = unansweredText(this.#upstream.namespace, `did not answer within ${ms} ms`);
          if (scope) scope.unanswered = text;
          throw new Error(text);
        }
        throw error;
      } finally {
        signal?.removeEventListener('abort', stopped);
        token?.done();
      }
    });
  }
}

/**
 * What the client and the audit are told about a call sent upstream that got no answer: its outcome is
 * unknown, and it must be checked before any retry.
 */
export function unansweredText(namespace: string, why: string): string {
  return (
    `upstream ${JSON.stringify(namespace)} ${why}: the outcome of the call is unknown — the upstream may have ` +
    'completed it. Check whether it took effect before any retry; do not simply call it again'
  );
}
