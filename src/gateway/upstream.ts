/**
 * One upstream MCP server of the gateway: its connection (stdio or Streamable HTTP), its tools in the
 * gateway's registry under its namespace, and what it sends back (progress, logging, resource updates,
 * sampling and elicitation requests). An upstream that crashes or cannot be reached is `down`: its own
 * tools, resources and prompts are refused with that reason while the others keep serving, and it is
 * reconnected with a growing delay.
 */
import { randomUUID } from 'node:crypto';
import {
  ProtocolError,
  ProtocolErrorCode,
  type Client,
  type JSONRPCMessage,
  type LoggingMessageNotification,
  type PriorDiscovery,
  type RequestOptions,
  type ServerCapabilities,
  type Transport,
} from '@modelcontextprotocol/client';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  connectClient,
  connectUpstreamServer,
  eraViolationMessage,
  openTransport,
  priorOf,
  TASKS_EXTENSION,
  type McpConnection,
  type McpSession,
  type McpStdioServer,
  type McpServerOptions,
  type UpstreamTask,
} from '../mcp/index.js';
import type { ToolRegistry } from '../registry.js';
import type { JsonSchema } from '../schema.js';
import type { ToolMetadataInput } from '../tool.js';
import { extensibleCopy } from './copies.js';
import { NO_OWNER, taskEnded, UnfinishedTasks } from './task-owners.js';
import { httpUpstreamTransport } from './upstream-fetch.js';
import { rawHttpTransport } from './upstream-raw-http.js';
import { GatewayClient, objectSchema, SCOPE, type CallScope, type ScopedRequestOptions } from './upstream-client.js';
import { fastPathOff, readRawAnswers } from './upstream-raw.js';

/** How to reach one upstream server; exactly one of `stdio`, `url`, `transport`. */
export interface GatewayUpstreamOptions {
  /** A local server to start over stdio. */
  readonly stdio?: McpStdioServer;
  /** A Streamable HTTP endpoint. */
  readonly url?: string | URL;
  /** Request headers for `url`. @default {} */
  readonly headers?: Readonly<Record<string, string>>;
  /** A transport factory (a new transport per connection attempt), for embedding and tests. */
  readonly transport?: () => Transport;
  /** Show the tools and prompts as `namespace:name` (true) or under their own names. @default true */
  readonly prefix?: boolean;
  /** Believe the upstream's tool annotations. @default false */
  readonly trusted?: boolean;
  /** Local tool metadata by the upstream's own tool names (the policy file's `tools:`). @default {} */
  readonly metadata?: Readonly<Record<string, ToolMetadataInput>>;
  /**
   * JSON Schemas by the upstream's own tool names (the policy file's `tools.<name>.parameters`), checked
   * besides the upstream's `inputSchema`: the gateway refuses what `toolgate explain` refuses. @default {}
   */
  readonly parameters?: Readonly<Record<string, JsonSchema>>;
  /** How long one request may take upstream. @default 60_000 */
  readonly callTimeoutMs?: number;
  /** How long connecting and the first listing may take. @default 10_000 */
  readonly connectTimeoutMs?: number;
}

/** Any JSON object (the tasks extension's answers are checked by tasks.ts). */
const ANY_OBJECT = objectSchema('the answer is not a JSON object');

export { unansweredText, type CallScope, type UpstreamInput } from './upstream-call.js';

/** `down`: crashed or unreachable, retried with a growing delay; `closed`: stopped by the gateway. */
export type UpstreamState = 'connecting' | 'ready' | 'down' | 'closed';

const BACKOFF_MS = [500, 1000, 2000, 5000, 10_000, 30_000];

/** One upstream server. */
export class Upstream {
  readonly namespace: string;
  readonly options: GatewayUpstreamOptions;
  readonly prefixed: boolean;
  #state: UpstreamState = 'connecting';
  #reason = 'not connected yet';
  #client: GatewayClient | null = null;
  /** A random id of the current connection (a new one on every connect): what a task handle is bound to. */
  #epoch: string = randomUUID();
  #session: McpSession | null = null;
  /** The era found at the last connect: a reconnection does not probe again, unless the upstream broke its era. */
  #prior: PriorDiscovery | undefined;
  #connection: McpConnection | null = null;
  #attempt = 0;
  #timer: NodeJS.Timeout | null = null;
  /** Downstream servers with requests in flight here, and how many. */
  readonly #inflight = new Map<Server, number>();
  /** The tasks unfinished here and their owners (task-owners.ts): whose a log line may be. */
  readonly tasks = new UnfinishedTasks();
  readonly #registry: ToolRegistry;
  readonly #events: UpstreamEvents;
  readonly #progress = new Map<string, CallScope>();
  #progressIds = 0;

  constructor(namespace: string, options: GatewayUpstreamOptions, registry: ToolRegistry, events: UpstreamEvents) {
    this.namespace = namespace;
    this.options = options;
    this.prefixed = options.prefix ?? true;
    this.#registry = registry;
    this.#events = events;
  }

  get state(): UpstreamState {
    return this.#state;
  }
  /** Why the upstream is not ready. */
  get reason(): string {
    return this.#reason;
  }
  get client(): Client | null {
    return this.#state === 'ready' ? this.#client : null;
  }
  get connection(): McpConnection | null {
    return this.#state === 'ready' ? this.#connection : null;
  }
  get capabilities(): ServerCapabilities {
    return this.#client?.getServerCapabilities() ?? {};
  }
  /**
   * The current connection's random id: a new one each time the gateway connects (a restarted or
   * reconnected upstream may number its tasks anew), never the same in another gateway process.
   */
  get epoch(): string {
    return this.#epoch;
  }
  /** Whether the upstream is modern and declares the tasks extension (SEP-2663) in its capabilities. */
  get offersTasks(): boolean {
    if (this.#state !== 'ready' || this.#session?.era !== 'modern') return false;
    const extension = (this.capabilities.extensions as Record<string, unknown> | undefined)?.[TASKS_EXTENSION];
    return extension !== null && typeof extension === 'object';
  }

  /**
   * Sends one of the tasks extension's requests (`tasks/get`, `tasks/update`, `tasks/cancel`) for the
   * upstream's own task id, declaring the extension, on behalf of the client's request `scope` is of (as
   * {@link Upstream.forward} runs every request: what the upstream sends meanwhile goes back there); the
   * answer as the upstream gave it (`resultType` removed by the SDK), checked by the caller.
   */
  async taskRequest(
    method: 'tasks/get' | 'tasks/update' | 'tasks/cancel',
    params: Record<string, unknown>,
    scope: CallScope,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    const client = this.#client;
    if (!client || !this.offersTasks) throw new Error(`upstream "${this.namespace}" does not offer tasks now`);
    return this.forward(
      scope,
      (s) =>
        client.request(
          { method, params: { ...params, _meta: client.withTasks(undefined) } } as never,
          ANY_OBJECT,
          this.requestOptions(s, signal ? { signal } : {}),
        ) as Promise<Record<string, unknown>>,
    );
  }

  /** The upstream's era and protocol version, as negotiated at its last connect. */
  get session(): McpSession | null {
    return this.#state === 'ready' ? this.#session : null;
  }

  /** The name the gateway shows for one of this upstream's tools or prompts. */
  shown(name: string): string {
    return this.prefixed ? `${this.namespace}:${name}` : name;
  }

  /** The upstream's own name for a name the gateway shows, or undefined when it is not one of this upstream's. */
  own(shown: string): string | undefined {
    if (!this.prefixed) return shown;
    const prefix = `${this.namespace}:`;
    return shown.startsWith(prefix) ? shown.slice(prefix.length) : undefined;
  }

  /** Connects; never throws (a failure leaves the upstream down and schedules a retry). */
  async start(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'connecting';
    const timeoutMs = this.options.connectTimeoutMs ?? 10_000;
    // The era probe may take all of it (on stdio a server's start-up counts; a silent one is a 2025
    // server), and the 2025 handshake after it as long again.
    const client = new GatewayClient(this, { sampling: {}, elicitation: { form: {}, url: {} } }, timeoutMs);
    this.#client = client;
    this.#epoch = randomUUID();
    this.#session = null;
    this.#wire(client);
    let timer: NodeJS.Timeout | undefined;
    try {
      const connecting = (async () => {
        // Discover first (2026-07-28), else the 2025-11-25 handshake; then the upstream is held to its era.
        this.#session = await connectClient(client, this.#endpoint(), {
          timeoutMs,
          ...(this.#prior ? { prior: this.#prior } : {}),
          inbound: (message) => this.#relay(message),
          onViolation: (violation) => {
            // The answer was refused; the upstream is reconnected, which probes its era again. A raw request's
            // result that comes after it is not taken (the SDK Client's requests fail as the connection closes).
            client.raw.broken();
            this.#prior = undefined;
            queueMicrotask(() => this.#down(eraViolationMessage(violation)));
          },
        });
        this.#prior = priorOf(this.#session);
        const upstreamOptions: McpServerOptions = {
          client,
          prefix: this.prefixed ? this.namespace : null,
          output: 'result',
          ...(this.options.trusted !== undefined ? { trusted: this.options.trusted } : {}),
          ...(this.options.metadata ? { metadata: this.options.metadata } : {}),
          ...(this.options.parameters ? { parameters: this.options.parameters } : {}),
        };
        // GatewayClient drops a call's signal when the call settles: the gate may pool its controllers.
        return connectUpstreamServer(this.#registry, upstreamOptions);
      })();
      const connection = await Promise.race([
        connecting,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${2 * timeoutMs} ms`)), 2 * timeoutMs);
        }),
      ]);
      if ((this.#state as UpstreamState) === 'closed') {
        await connection.close().catch(() => undefined);
        return;
      }
      this.#connection = connection;
      this.#state = 'ready';
      this.#attempt = 0;
      this.#reason = '';
      // The Router keeps what it lists (and, bounded, what it listed before: a call to one of those while it is
      // down is refused by name).
      connection.onToolsChanged(() => this.#events.toolsChanged(this));
      client.onclose = () => {
        this.#down('its connection closed (the server exited or the network failed)');
        client.raw.fail();
      };
      this.#events.stateChanged(this);
    } catch (error) {
      // A verdict that no longer holds (the server was upgraded or replaced) fails here: probe next time.
      this.#prior = undefined;
      await client.close().catch(() => undefined);
      this.#down(`it could not be connected: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Where the upstream is (a transport factory gives a new transport per attempt). */
  #endpoint(): {
    stdio?: McpStdioServer;
    url?: string | URL;
    headers?: Readonly<Record<string, string>>;
    transport?: Transport;
  } {
    const o = this.options;
    if (o.transport) return { transport: o.transport() };
    // The fast path's answers are read without the SDK's schema (upstream-raw.ts); all else as the SDK reads it.
    if (o.stdio)
      return fastPathOff() ? { stdio: o.stdio } : { transport: readRawAnswers(openTransport({ stdio: o.stdio })) };
    // Over Streamable HTTP through node:http with keep-alive (upstream-fetch.ts), not the global fetch; the
    // fast path's requests sent and read raw (upstream-raw-http.ts).
    return {
      transport: fastPathOff() ? httpUpstreamTransport(o.url!, o.headers) : rawHttpTransport(o.url!, o.headers),
    };
  }

  #down(reason: string): void {
    if (this.#state === 'closed' || this.#state === 'down') return;
    const wasReady = this.#state === 'ready';
    this.#state = 'down';
    this.#reason = reason;
    const connection = this.#connection;
    this.#connection = null;
    // Unregisters this upstream's tools; calls to them are refused with the reason until it is back.
    void connection?.close().catch(() => undefined);
    this.#events.stateChanged(this);
    if (wasReady) this.#events.toolsChanged(this);
    const delay = BACKOFF_MS[Math.min(this.#attempt, BACKOFF_MS.length - 1)]!;
    this.#attempt++;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.start();
    }, delay);
    this.#timer.unref();
  }

  /** Handlers for what the upstream sends on its own: list changes, logging, resource updates, sampling, elicitation. */
  #wire(client: GatewayClient): void {
    client.setNotificationHandler('notifications/resources/list_changed', () => this.#events.resourcesChanged(this));
    client.setNotificationHandler('notifications/prompts/list_changed', () => this.#events.promptsChanged(this));
    client.setNotificationHandler('notifications/resources/updated', (n) =>
      this.#events.resourceUpdated(this, n.params.uri),
    );
    // A 2025-11-25 upstream sends these as requests; a 2026-07-28 upstream's input_required results come
    // here too (the SDK fulfils them through these handlers and retries the call).
    client.setRequestHandler('sampling/createMessage', async (request, ctx) => {
      const server = this.requester('sampling');
      return server.createMessage(request.params as Parameters<Server['createMessage']>[0], {
        signal: ctx.mcpReq.signal,
      }) as never;
    });
    client.setRequestHandler('elicitation/create', async (request, ctx) => {
      const server = this.requester('elicitation');
      return server.elicitInput(request.params as Parameters<Server['elicitInput']>[0], {
        signal: ctx.mcpReq.signal,
      }) as never;
    });
  }

  /**
   * The downstream client a request from the upstream (sampling, elicitation) belongs to: the one client
   * with a request in flight here. With none, or several (the request could reach the wrong person), it
   * is refused.
   */
  requester(capability: 'sampling' | 'elicitation'): Server {
    const servers = [...this.#inflight.keys()];
    if (servers.length !== 1)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        servers.length === 0
          ? `toolgate gateway: ${capability} requests are forwarded only while a client's request to upstream "${this.namespace}" is in flight`
          : `toolgate gateway: ${servers.length} clients have requests in flight to upstream "${this.namespace}"; the ${capability} request cannot be attributed to one of them`,
      );
    const server = servers[0]!;
    if (!server.getClientCapabilities()?.[capability])
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        `toolgate gateway: the client behind the gateway does not support ${capability}`,
      );
    return server;
  }

  /** A task the upstream created for the request `scope` is of, tracked until it ends (task-owners.ts). */
  taskCreated(task: UpstreamTask, scope: CallScope | undefined): void {
    if (!taskEnded(task.status))
      this.tasks.started(this.#epoch, task.taskId, task.fields['ttlMs'], scope?.owner ?? NO_OWNER);
  }

  /** Downstream servers with requests in flight here. */
  get inflight(): readonly Server[] {
    return [...this.#inflight.keys()];
  }

  /**
   * Runs a request to the upstream on behalf of the downstream request `scope` is of (tracked as in flight);
   * undefined: a request of the gateway's own.
   */
  async forward<T>(scope: CallScope | undefined, request: (scope: CallScope | undefined) => Promise<T>): Promise<T> {
    this.requestBegan(scope);
    try {
      return await request(scope);
    } finally {
      this.requestEnded(scope);
    }
  }

  /** A request on behalf of the downstream request `scope` is of begins: in flight until {@link requestEnded}. */
  requestBegan(scope: CallScope | undefined): void {
    const server = scope?.server;
    if (server) this.#inflight.set(server, (this.#inflight.get(server) ?? 0) + 1);
  }

  /** The request {@link requestBegan} counted has settled. */
  requestEnded(scope: CallScope | undefined): void {
    const server = scope?.server;
    if (server) {
      const n = (this.#inflight.get(server) ?? 1) - 1;
      if (n <= 0) this.#inflight.delete(server);
      else this.#inflight.set(server, n);
    }
  }

  /** Request options towards the upstream: its timeout, and the scope of the downstream request they serve. */
  requestOptions(scope: CallScope | undefined, options: RequestOptions = {}): ScopedRequestOptions {
    // A request that relays the upstream's rounds takes its input_required as it is (not fulfilled here).
    const manual = scope?.input !== undefined && this.#session?.era === 'modern';
    // As `{ ...options, timeout, allowInputRequired?, [SCOPE] }` in that order, without V8's slow path for keys
    // added to a spread's copy (copies.ts).
    const out: { -readonly [K in keyof ScopedRequestOptions]: ScopedRequestOptions[K] } = extensibleCopy(options);
    out.timeout = this.options.callTimeoutMs ?? 60_000;
    if (manual) out.allowInputRequired = true;
    out[SCOPE] = scope;
    return out;
  }

  /**
   * A progress token of the gateway's own for one forwarded call, whose progress is relayed to the
   * downstream request under the downstream's token.
   */
  relayProgress(scope: CallScope): { readonly id: string; done(): void } {
    const id = `toolgate-${++this.#progressIds}`;
    this.#progress.set(id, scope);
    return { id, done: () => this.#progress.delete(id) };
  }

  /**
   * Progress and log messages, taken off the transport as they arrive, in order (see tapTransport): the
   * progress of a forwarded call goes back to its downstream request under the downstream's token.
   */
  #relay(message: JSONRPCMessage): JSONRPCMessage | null | undefined {
    // An answer to the fast path's own request (upstream-raw.ts): never seen by the SDK Client.
    if (this.#client?.raw.take(message)) return null;
    const body = message as { method?: unknown; id?: unknown; params?: unknown };
    if (typeof body.method !== 'string' || 'id' in body) return undefined;
    if (body.method === 'notifications/progress') {
      const params = (body.params ?? {}) as { progressToken?: unknown } & Record<string, unknown>;
      const scope = this.#progress.get(String(params.progressToken));
      if (scope?.progressToken !== undefined)
        void scope.sendNotification({
          method: 'notifications/progress',
          params: { ...params, progressToken: scope.progressToken },
        });
      return null;
    }
    if (body.method === 'notifications/message') {
      const params = body.params as LoggingMessageNotification['params'] | undefined;
      if (params && typeof params === 'object' && typeof params.level === 'string') this.#events.log(this, params);
      return null;
    }
    return undefined;
  }

  /** Stops the upstream (a stdio server is terminated) and cancels any reconnection. */
  async close(): Promise<void> {
    this.#state = 'closed';
    if (this.#timer) clearTimeout(this.#timer);
    const connection = this.#connection;
    this.#connection = null;
    await connection?.close().catch(() => undefined);
    await this.#client?.close().catch(() => undefined);
  }
}

/** What an upstream tells the gateway. */
export interface UpstreamEvents {
  stateChanged(upstream: Upstream): void;
  toolsChanged(upstream: Upstream): void;
  resourcesChanged(upstream: Upstream): void;
  promptsChanged(upstream: Upstream): void;
  resourceUpdated(upstream: Upstream, uri: string): void;
  log(upstream: Upstream, params: LoggingMessageNotification['params']): void;
}
