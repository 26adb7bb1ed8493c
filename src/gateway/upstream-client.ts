/**
 * The gateway's MCP client to one upstream (the SDK v2 Client): forwards a downstream request's progress
 * token, tells a modern upstream what the client declared (tasks, input capabilities) and relays its own
 * input rounds, and marks a call sent upstream that got no answer as of unknown outcome. The connection's
 * lifecycle (connect, list, reconnect) is upstream.ts's; this file is what one request does on it.
 */
import {
  Client,
  LOG_LEVEL_META_KEY,
  type CallToolRequest,
  type CallToolRequestOptions,
  type CallToolResult,
  type ClientCapabilities,
  type Request,
  type RequestMethod,
  type RequestOptions,
  type ResultTypeMap,
  type StandardSchemaV1,
  type Tool as McpTool,
} from '@modelcontextprotocol/client';
import { clientOptions, MODERN_VERSION, TASKS_EXTENSION } from '../mcp/index.js';
import {
  answeredCall,
  failedCall,
  inputStandIn,
  RawToolCall,
  relayedInput,
  stoppedCall,
  type CallScope,
  type ClientUpstream,
  type UpstreamInput,
} from './upstream-call.js';
import { boundedRefusal } from './raw-results.js';
import { RawRequests, type ModernWire, type RawOptions } from './upstream-raw.js';
import { RawHttpTransport } from './upstream-raw-http.js';
import { asIs, modernWire, sendsNoHeaders, withoutClientEnvelope } from './upstream-raw-modern.js';

export type { CallScope, ClientUpstream, UpstreamInput } from './upstream-call.js';

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

/**
 * A read that failed, its error as every path gives it (a refused result's message bounded: raw-results.ts's
 * boundedRefusal; the raw 2025-era read bounds its own).
 */
function refusedRead(error: unknown): never {
  throw boundedRefusal(error);
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
        .then((r) => relayedInput(r, input, this.#upstream.namespace, () => ({ contents: [] })), refusedRead);
    return super
      .readResource(this.#withInput(params, input), options)
      .then((r) => relayedInput(r, input, this.#upstream.namespace, () => ({ contents: [] })), refusedRead);
  }

  override getPrompt(
    params: Parameters<Client['getPrompt']>[0],
    options?: RequestOptions,
  ): ReturnType<Client['getPrompt']> {
    const input = scopeOf(options)?.input;
    return super
      .getPrompt(this.#withInput(withoutClientEnvelope(params), input), options)
      .then((r) => relayedInput(r, input, this.#upstream.namespace, () => ({ messages: [] })));
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
    const definition = options?.toolDefinition;
    const signal = options?.signal;
    // Raw to a 2025-era upstream: one promise for the whole call (upstream-call.ts's RawToolCall), the same steps.
    if (definition !== undefined && this.#raw(called))
      return new Promise<CallToolResult>((resolve, reject) => {
        const tasks = this.#tasks(called);
        const call = new RawToolCall(this.#upstream, called, { signal, name: params.name, tasks }, resolve, reject);
        try {
          call.token = called.progressToken !== undefined ? this.#upstream.relayProgress(called) : undefined;
          const sent = this.#sent(params, called, call.token, tasks);
          // A tool whose output schema does not compile fails before anything is sent (the SDK's message).
          call.validator = this.raw.outputValidator(definition, sent.name);
          this.raw.send('tools/call', sent, this.#rawOptions(signal), call);
        } catch (error) {
          call.rejected(error);
        }
      });
    return this.#upstream.forward(called, async (scope) => {
      const token = scope?.progressToken !== undefined ? this.#upstream.relayProgress(scope) : undefined;
      // The request leaves for the upstream now: its outcome is known once answered, unknown if it is stopped
      // meanwhile (stoppedCall, set synchronously on abort) or times out (failedCall).
      const stopped = (): void => stoppedCall(this.#upstream, scope);
      signal?.addEventListener('abort', stopped, { once: true });
      try {
        const tasks = this.#tasks(scope);
        const sent = this.#sent(params, scope, token, tasks);
        const result = relayedInput(
          await (this.#rawModern(scope, definition, tasks, sent.name)
            ? this.raw.callTool(
                this.#leveled(sent, scope),
                definition!,
                this.#upstream.requestOptions(scope, options),
                this.#modern,
              )
            : super.callTool(sent, this.#upstream.requestOptions(scope, options))),
          scope?.input,
          this.#upstream.namespace,
          inputStandIn,
        );
        return answeredCall(result, this.#upstream, scope, tasks);
      } catch (error) {
        throw failedCall(error, this.#upstream, scope, signal);
      } finally {
        signal?.removeEventListener('abort', stopped);
        token?.done();
      }
    });
  }

  /**
   * Whether the call tells the upstream that the client takes tasks: only for a request that does, and only a
   * modern upstream that offers them (the extension does not exist in 2025-11-25).
   */
  #tasks(scope: CallScope | undefined): boolean {
    return scope?.tasks === true && this.#upstream.offersTasks;
  }

  /** The params a call sends: the client's envelope dropped, the gateway's progress token, tasks and input rounds. */
  #sent(
    params: CallToolParams,
    scope: CallScope | undefined,
    token: { readonly id: string } | undefined,
    tasks: boolean,
  ): CallToolParams {
    const own = withoutClientEnvelope(params);
    const withToken = token ? { ...own, _meta: { ...own._meta, progressToken: token.id } } : own;
    return this.#withInput(tasks ? { ...withToken, _meta: this.withTasks(withToken._meta) } : withToken, scope?.input);
  }
}
