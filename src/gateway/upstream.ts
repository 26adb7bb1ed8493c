/**
 * One upstream MCP server of the gateway: its connection (stdio or Streamable HTTP), its tools in the
 * gateway's registry under its namespace, and what it sends back (progress, logging, resource updates,
 * sampling and elicitation requests). An upstream that crashes or cannot be reached is `down`: its own
 * tools, resources and prompts are refused with that reason while the others keep serving, and it is
 * reconnected with a growing delay.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type CallToolRequest,
  type CallToolResult,
  type CompatibilityCallToolResultSchema,
  type CallToolResultSchema,
  type ClientCapabilities,
  type LoggingMessageNotification,
  type ProgressToken,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { connectMcpServer, type McpConnection, type McpStdioServer } from '../adapters/mcp/client.js';
import type { ToolRegistry } from '../registry.js';
import type { JsonSchema } from '../schema.js';
import type { ToolMetadataInput } from '../tool.js';

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
}

/** The downstream request being served, across the gate's promise chain down to the upstream call. */
export const callScope = new AsyncLocalStorage<CallScope>();

type CallToolParams = CallToolRequest['params'];
type CallToolSchema = typeof CallToolResultSchema | typeof CompatibilityCallToolResultSchema;

/** The upstream's client: forwards the downstream's progress token and tracks which client a call is for. */
class GatewayClient extends Client {
  readonly #upstream: Upstream;
  constructor(upstream: Upstream, capabilities: ClientCapabilities) {
    super({ name: 'toolgate-gateway', version: '0.2.0' }, { capabilities });
    this.#upstream = upstream;
  }

  override callTool(params: CallToolParams, resultSchema?: CallToolSchema, options?: RequestOptions) {
    return this.#upstream.forward(async (scope) => {
      const token = scope?.progressToken !== undefined ? this.#upstream.relayProgress(scope) : undefined;
      try {
        const withToken = token ? { ...params, _meta: { ...params._meta, progressToken: token.id } } : params;
        const result = await super.callTool(withToken, resultSchema, this.#upstream.requestOptions(scope, options));
        if (scope) scope.result = result as CallToolResult;
        return result;
      } catch (error) {
        if (error instanceof McpError && error.code === ErrorCode.RequestTimeout)
          throw new Error(
            `upstream "${this.#upstream.namespace}" did not finish within ${this.#upstream.options.callTimeoutMs ?? 60_000} ms; the request was cancelled upstream`,
          );
        throw error;
      } finally {
        token?.done();
      }
    });
  }
}

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
  #connection: McpConnection | null = null;
  #attempt = 0;
  #timer: NodeJS.Timeout | null = null;
  /** Downstream servers with requests in flight here, and how many. */
  readonly #inflight = new Map<Server, number>();
  readonly #registry: ToolRegistry;
  readonly #events: UpstreamEvents;
  /** Every tool name this upstream ever registered (so a call to one of them while it is down is refused by name). */
  readonly knownTools = new Set<string>();
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
    const client = new GatewayClient(this, { sampling: {}, elicitation: { form: {}, url: {} } });
    this.#client = client;
    this.#wire(client);
    const timeoutMs = this.options.connectTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      const connecting = (async () => {
        await client.connect(this.#tap(this.#transport()), { timeout: timeoutMs });
        return connectMcpServer(this.#registry, {
          client,
          prefix: this.prefixed ? this.namespace : null,
          output: 'result',
          ...(this.options.trusted !== undefined ? { trusted: this.options.trusted } : {}),
          ...(this.options.metadata ? { metadata: this.options.metadata } : {}),
          ...(this.options.parameters ? { parameters: this.options.parameters } : {}),
        });
      })();
      const connection = await Promise.race([
        connecting,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
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
      for (const name of connection.tools) this.knownTools.add(name);
      connection.onToolsChanged((tools) => {
        for (const name of tools) this.knownTools.add(name);
        this.#events.toolsChanged(this);
      });
      client.onclose = () => this.#down('its connection closed (the server exited or the network failed)');
      this.#events.stateChanged(this);
    } catch (error) {
      await client.close().catch(() => undefined);
      this.#down(`it could not be connected: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      clearTimeout(timer);
    }
  }

  #transport(): Transport {
    const o = this.options;
    if (o.transport) return o.transport();
    if (o.stdio) {
      const { command, args, env, cwd, stderr } = o.stdio;
      return new StdioClientTransport({
        command,
        args: [...(args ?? [])],
        ...(env ? { env: { ...env } } : {}), // the SDK adds PATH, HOME and the like
        ...(cwd ? { cwd } : {}),
        stderr: stderr ?? 'inherit',
      });
    }
    const url = o.url instanceof URL ? o.url : new URL(String(o.url));
    return new StreamableHTTPClientTransport(
      url,
      o.headers ? { requestInit: { headers: { ...o.headers } } } : undefined,
    );
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
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => this.#events.resourcesChanged(this));
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => this.#events.promptsChanged(this));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) =>
      this.#events.resourceUpdated(this, n.params.uri),
    );
    client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
      const server = this.requester('sampling');
      return server.createMessage(request.params, { signal: extra.signal });
    });
    client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
      const server = this.requester('elicitation');
      return server.elicitInput(request.params, { signal: extra.signal });
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
      throw new McpError(
        ErrorCode.InvalidRequest,
        servers.length === 0
          ? `toolgate gateway: ${capability} requests are forwarded only while a client's request to upstream "${this.namespace}" is in flight`
          : `toolgate gateway: ${servers.length} clients have requests in flight to upstream "${this.namespace}"; the ${capability} request cannot be attributed to one of them`,
      );
    const server = servers[0]!;
    if (!server.getClientCapabilities()?.[capability])
      throw new McpError(
        ErrorCode.InvalidRequest,
        `toolgate gateway: the client behind the gateway does not support ${capability}`,
      );
    return server;
  }

  /** Downstream servers with requests in flight here. */
  get inflight(): readonly Server[] {
    return [...this.#inflight.keys()];
  }

  /** Runs a request to the upstream on behalf of the current downstream request (tracked as in flight). */
  async forward<T>(request: (scope: CallScope | undefined) => Promise<T>): Promise<T> {
    const scope = callScope.getStore();
    const server = scope?.server;
    if (server) this.#inflight.set(server, (this.#inflight.get(server) ?? 0) + 1);
    try {
      return await request(scope);
    } finally {
      if (server) {
        const n = (this.#inflight.get(server) ?? 1) - 1;
        if (n <= 0) this.#inflight.delete(server);
        else this.#inflight.set(server, n);
      }
    }
  }

  /** Request options towards the upstream: its timeout. */
  requestOptions(_scope: CallScope | undefined, options: RequestOptions = {}): RequestOptions {
    return { ...options, timeout: this.options.callTimeoutMs ?? 60_000 };
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
   * Progress and log messages are taken off the transport as they arrive, in order: the SDK hands
   * notifications to handlers a microtask later than responses, so progress (and a log line) sent just
   * before a result would otherwise be handled after the call had ended and be lost or misdirected.
   */
  #tap(transport: Transport): Transport {
    let inner: Transport['onmessage'];
    const tapped: NonNullable<Transport['onmessage']> = (message, extra) => {
      if ('method' in message && !('id' in message)) {
        if (message.method === 'notifications/progress') {
          const params = (message.params ?? {}) as { progressToken?: unknown } & Record<string, unknown>;
          const scope = this.#progress.get(String(params.progressToken));
          if (scope?.progressToken !== undefined)
            void scope.sendNotification({
              method: 'notifications/progress',
              params: { ...params, progressToken: scope.progressToken },
            });
          return;
        }
        if (message.method === 'notifications/message') {
          const parsed = LoggingMessageNotificationSchema.safeParse(message);
          if (parsed.success) this.#events.log(this, parsed.data.params);
          return;
        }
      }
      inner?.(message, extra);
    };
    Object.defineProperty(transport, 'onmessage', {
      configurable: true,
      // Unset until the client sets its handler (the SDK reads the previous one to chain it).
      get: () => (inner ? tapped : undefined),
      set: (handler: Transport['onmessage']) => {
        inner = handler;
      },
    });
    return transport;
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
