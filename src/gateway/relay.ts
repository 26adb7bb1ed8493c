/**
 * What travels between the gateway's clients and its upstreams besides a request and its result: the
 * notifications of a request (progress, log lines) delivered before its result, list changes announced to
 * every client, resource subscriptions fanned out to the clients that hold them, and the upstream's log
 * lines to the one client they are certainly about (or to nobody). One Relay per gateway; it decides nothing.
 */
import type { Client } from '@modelcontextprotocol/client';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type {
  LoggingLevel,
  LoggingMessageNotification,
  ProgressToken,
  ServerNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { normalResourceUri } from '../policy-file/uri.js';
import type { Exchange } from './stepup.js';
import type { CallScope, Upstream, UpstreamInput } from './upstream.js';

/** A downstream server (one client connection or HTTP session) and what the gateway tracks for it. */
export interface Downstream {
  readonly server: Server;
  /** The client asked for log messages (`logging/setLevel`). */
  logging: boolean;
  /**
   * The level it asked for (`logging/setLevel`): what its requests to a 2026-07-28 upstream carry in their
   * `_meta` (that revision has no setLevel), and the least severe line of theirs it is given.
   */
  level?: LoggingLevel;
  /**
   * Whether this client may hear `upstream`'s log lines that belong to no request of theirs (an upstream
   * limited to other tenants: no). Set with `logging`. @default every upstream
   */
  hears?: (upstream: Upstream) => boolean;
}

/** What a forwarded request needs of the downstream request it serves (the SDK's `extra`, or the next era's). */
export interface RelayedRequest {
  readonly signal: AbortSignal;
  readonly progressToken: ProgressToken | undefined;
  readonly sendNotification: (notification: ServerNotification) => Promise<void>;
  /**
   * The request takes an upstream's task (a 2026-07-28 request that declared the tasks extension, to a
   * gateway that offers it): only then is an upstream told the client takes tasks (tasks.ts). @default false
   */
  readonly tasks?: boolean;
  /** The upstream's own rounds this request relays (a 2026-07-28 tools/call, resources/read, prompts/get). */
  readonly input?: UpstreamInput;
  /** The request came by the fast path (fastpath.ts, http-fast.ts): sent raw to a 2025-era stdio or HTTP upstream. @default false */
  readonly raw?: boolean;
  /**
   * The 2026-07-28 HTTP exchange the request is (modern.ts, modern-fast.ts): where a call the caller layer
   * refused puts the step-up its HTTP answer carries (stepup.ts). Absent for a 2025-era request.
   */
  readonly exchange?: Exchange;
  /** Who a task the request creates or reaches belongs to (task-owners.ts's ownerKey); absent when it takes none. */
  readonly owner?: string;
  /**
   * The log level a 2026-07-28 request carried in its `_meta` (`io.modelcontextprotocol/logLevel`), passed on
   * as it came; absent, it asked for no line. A 2025-era session's requests take the level the client set.
   */
  readonly logLevel?: LoggingLevel;
}

/** The log levels, least severe first (RFC 5424 names, as MCP has them). */
export const LOG_LEVELS: readonly LoggingLevel[] = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
];

/** Whether a line at `level` is asked for by a request that asked for `wanted` (none asked: no line). */
export function heardAt(level: unknown, wanted: LoggingLevel | undefined): boolean {
  if (wanted === undefined) return false;
  const at = LOG_LEVELS.indexOf(level as LoggingLevel);
  return at >= 0 && at >= LOG_LEVELS.indexOf(wanted);
}

/** What {@link Relay.delivered} answers when no notification is in transit (the same promise each time). */
export const DELIVERED: Promise<void> = Promise.resolve();

/** The gateway's relay: downstream servers, notifications in transit, subscriptions. */
export class Relay {
  readonly downstreams = new Set<Downstream>();
  // Notifications on their way to a client (progress, log messages) are delivered before the result of the
  // request they belong to: a client drops progress that arrives after the result.
  readonly #inTransit = new WeakMap<Server, Set<Promise<void>>>();
  /** `namespace uri` → the downstream servers subscribed. */
  readonly #subscriptions = new Map<string, Set<Server>>();
  readonly #upstreams: ReadonlyMap<string, Upstream>;
  /**
   * Whether requests of several tenants may use `upstream` (tenancy.ts's sharedAcrossTenants under the
   * policy in force, set by the gateway): its lines outside any request then reach no listener. Until set,
   * every upstream is taken as shared.
   */
  sharedAcrossTenants: (upstream: Upstream) => boolean = () => true;
  /** The task owner of a 2026-07-28 request's server (one per request) that takes tasks. */
  readonly #owners = new WeakMap<Server, string>();
  /** Each 2025-era session's downstream by its server (the level its client set). */
  readonly #downstreamOf = new WeakMap<Server, Downstream>();
  /** Some 2025-era client set a level ({@link Relay.setLevel}): until then no request looks its session's up. */
  #sessionLevels = false;
  /** The log level a 2026-07-28 request's server (one per request) asked for in its `_meta`. */
  readonly #levels = new WeakMap<Server, LoggingLevel>();

  constructor(upstreams: ReadonlyMap<string, Upstream>) {
    this.#upstreams = upstreams;
  }

  /** Tracks a notification on its way to `server` (awaited by {@link Relay.delivered}). */
  track(server: Server, sending: Promise<void>): Promise<void> {
    let set = this.#inTransit.get(server);
    if (!set) this.#inTransit.set(server, (set = new Set()));
    const settled = sending.catch(() => undefined);
    set.add(settled);
    void settled.then(() => set.delete(settled));
    return settled;
  }

  /**
   * Resolves once every notification in transit to `server` was sent (with none in transit, an already
   * resolved promise: no async frame and no Promise.all per call).
   */
  delivered(server: Server): Promise<void> {
    const inTransit = this.#inTransit.get(server);
    if (inTransit === undefined || inTransit.size === 0) return DELIVERED;
    return Promise.all(inTransit).then(() => undefined);
  }

  /**
   * The scope an upstream request runs in for one downstream request (its progress relayed back there; its
   * log level, the request's own or its session's, carried to a 2026-07-28 upstream).
   */
  scopeOf(server: Server, request: RelayedRequest): CallScope {
    if (request.owner !== undefined) this.#owners.set(server, request.owner);
    const own = request.logLevel;
    if (own !== undefined) this.#levels.set(server, own);
    const level = own ?? (this.#sessionLevels ? this.#downstreamOf.get(server)?.level : undefined);
    const scope: { -readonly [K in keyof CallScope]: CallScope[K] } = {
      server,
      progressToken: request.progressToken,
      sendNotification: (n) => this.track(server, request.sendNotification(n as ServerNotification)),
      tasks: request.tasks === true,
    };
    // Set on the new object, not spread from conditional ones (a slow define per call on the gateway's path).
    if (request.input) scope.input = request.input;
    if (request.raw === true) scope.raw = true;
    if (request.owner !== undefined) scope.owner = request.owner;
    if (level !== undefined) scope.logLevel = level;
    return scope;
  }

  /**
   * Forwards one request to `upstream` in the downstream request's scope (its progress relayed, cancelled
   * with it); the notifications it caused are delivered before its result.
   */
  async forwarded<T>(
    server: Server,
    request: RelayedRequest,
    upstream: Upstream,
    send: (client: Client, options: RequestOptions) => Promise<T>,
  ): Promise<T> {
    const result = await upstream.forward(this.scopeOf(server, request), (scope) =>
      send(upstream.client!, upstream.requestOptions(scope, { signal: request.signal })),
    );
    await this.delivered(server);
    return result;
  }

  /** Sends something to every connected client (failures ignored: a client that went away hears nothing). */
  broadcast(send: (server: Server) => Promise<void>): void {
    for (const d of this.downstreams) {
      if (d.server.transport === undefined) continue;
      send(d.server).catch(() => undefined);
    }
  }

  /** Tells every client that the lists it may see changed. */
  listsChanged(kinds: readonly ('tools' | 'resources' | 'prompts')[] = ['tools', 'resources', 'prompts']): void {
    for (const kind of kinds)
      this.broadcast((s) =>
        kind === 'tools'
          ? s.sendToolListChanged()
          : kind === 'resources'
            ? s.sendResourceListChanged()
            : s.sendPromptListChanged(),
      );
  }

  /** True when some client holds a subscription to `uri` (normal form) at `upstream`. */
  subscribed(upstream: Upstream, uri: string): boolean {
    return (this.#subscriptions.get(`${upstream.namespace} ${uri}`)?.size ?? 0) > 0;
  }

  /** Records `server`'s subscription to `uri` at `upstream`; `first` subscribes upstream when none held it yet. */
  async subscribe(server: Server, upstream: Upstream, uri: string, first: () => Promise<unknown>): Promise<void> {
    const key = `${upstream.namespace} ${uri}`;
    let servers = this.#subscriptions.get(key);
    if (!servers) {
      await first();
      // Another client may have subscribed while this one waited for the upstream.
      servers = this.#subscriptions.get(key);
      if (!servers) this.#subscriptions.set(key, (servers = new Set()));
    }
    servers.add(server);
  }

  /**
   * Drops `server`'s subscription; the upstream is unsubscribed when no client holds one any more, on behalf
   * of `request` (the client's unsubscribe) when given.
   */
  async unsubscribe(server: Server, upstream: Upstream, uri: string, request?: RelayedRequest): Promise<void> {
    const key = `${upstream.namespace} ${uri}`;
    const servers = this.#subscriptions.get(key);
    servers?.delete(server);
    if (servers && servers.size === 0) {
      this.#subscriptions.delete(key);
      const client = upstream.client;
      if (!client) return;
      const scope = request ? this.scopeOf(server, request) : undefined;
      await upstream
        .forward(scope, (s) => client.unsubscribeResource({ uri }, upstream.requestOptions(s)))
        .catch(() => undefined);
    }
  }

  /** An upstream's `notifications/resources/updated`: to the clients subscribed to that URI. */
  resourceUpdated(upstream: Upstream, uri: string): void {
    const normal = normalResourceUri(uri);
    if (!normal.ok) return;
    for (const server of this.#subscriptions.get(`${upstream.namespace} ${normal.uri}`) ?? [])
      server.sendResourceUpdated({ uri }).catch(() => undefined);
  }

  /**
   * An upstream's log message, which nothing ties to one request (over stdio nothing can): delivered only
   * where whose it is is certain, else to nobody. A line comes of a request in flight there or of a task
   * running there between requests (task-owners.ts). With one client's request in flight, to that client,
   * if every unfinished task there is its owner's too (a request that owns none, with any task unfinished:
   * nobody); with several in flight, nobody. With none in flight, to the clients that asked for logging and
   * hear that upstream, if no task is unfinished there (a listening 2025-era session owns no task) and the
   * upstream serves one tenant only (a line of another tenant's finished request may come late). Whatever
   * the upstream's era, a client hears only lines at or above its own level (its request's, or what it set;
   * none set, no line): another client's level, told to a 2025-era upstream, is not its own.
   *
   * A 2026-07-28 upstream logs only for a request that carried a level (logging.mdx), on that request's
   * stream: its line goes to the one client in flight only if that client's request carried a level, the
   * line is at or above it (an upstream that logs anyway is not believed) and the upstream is reached over
   * HTTP (the line came on that request's stream; over stdio it may be a late line of another client's answered
   * request), and with none in flight to nobody.
   */
  log(upstream: Upstream, params: LoggingMessageNotification['params']): void {
    const inflight = upstream.inflight;
    if (inflight.length > 1) return;
    const owners = upstream.tasks.owners();
    const modern = upstream.session?.era === 'modern';
    let targets: readonly Server[];
    if (inflight.length === 1) {
      const server = inflight[0]!;
      const owner = this.#owners.get(server);
      if (owners.size > 1 || (owners.size === 1 && (owner === undefined || !owners.has(owner)))) return;
      if (!heardAt(params.level, this.#levelOf(server))) return;
      // Over stdio nothing ties a 2026-07-28 line to the request in flight: it may be a late line of a request
      // already answered (another client's). Over HTTP a line comes on its request's own stream, which closes
      // with the answer; a transport given as a factory is not known to do either.
      if (modern && upstream.options.url === undefined) return;
      targets = inflight;
    } else {
      if (modern || owners.size > 0 || this.sharedAcrossTenants(upstream)) return;
      targets = [...this.downstreams]
        .filter((d) => d.logging && heardAt(params.level, d.level) && (d.hears?.(upstream) ?? true))
        .map((d) => d.server);
    }
    for (const server of targets)
      void this.track(server, server.notification({ method: 'notifications/message', params }));
  }

  /** A 2025-era client set `level` (`logging/setLevel`): its session's requests carry it from now on. */
  setLevel(downstream: Downstream, level: LoggingLevel): void {
    downstream.level = level;
    this.#sessionLevels = true;
  }

  /** The log level `server`'s requests asked for: a 2026-07-28 request's own, or what a 2025-era client set. */
  #levelOf(server: Server): LoggingLevel | undefined {
    return this.#levels.get(server) ?? this.#downstreamOf.get(server)?.level;
  }

  /** Adds a downstream server; its subscriptions are dropped (and released upstream) when it closes. */
  add(downstream: Downstream): void {
    this.downstreams.add(downstream);
    const server = downstream.server;
    this.#downstreamOf.set(server, downstream);
    const previous = server.onclose;
    server.onclose = () => {
      previous?.();
      this.downstreams.delete(downstream);
      for (const [key, servers] of this.#subscriptions) {
        if (!servers.delete(server) || servers.size > 0) continue;
        this.#subscriptions.delete(key);
        const [namespace, uri] = [key.slice(0, key.indexOf(' ')), key.slice(key.indexOf(' ') + 1)];
        void this.#upstreams
          .get(namespace)
          ?.client?.unsubscribeResource({ uri })
          .catch(() => undefined);
      }
    };
  }

  /** Closes every downstream server. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.downstreams].map((d) => d.server.close()));
  }
}
