/**
 * The MCP client of toolgate (used by `toolgate/mcp` and by the gateway towards its upstreams), on the
 * SDK v2 (`@modelcontextprotocol/client`): it speaks each server's era. Connecting probes with
 * `server/discover` first (2026-07-28: stateless, per-request `_meta`) and falls back to the 2025-11-25
 * `initialize` handshake when the server is not modern; from then on every answer is held to the era the
 * server announced (era.ts).
 */
import {
  Client,
  type CacheEntry,
  type CacheKey,
  type ClientCapabilities,
  type ClientOptions,
  type DiscoverResult,
  type JSONRPCMessage,
  type PriorDiscovery,
  type ResponseCacheStore,
  type ServerCapabilities,
} from '@modelcontextprotocol/client';
import { describe } from '../names.js';
import { eraCheck, trackRequests, type EraState, type McpEra, type McpEraViolationListener } from './era.js';
import { listingTap, MAX_LIST_PAGES } from './listing.js';
import { outputSchemaValidator } from './output-schemas.js';
import { openTransport, tapTransport, type InboundTap, type McpEndpoint } from './transport.js';

/** A connected client and what the server announced. */
export interface McpSession {
  readonly client: Client;
  /** The server's era, decided at connect. */
  readonly era: McpEra;
  /** The protocol version negotiated at connect (`2026-07-28`, `2025-11-25`, …). */
  readonly version: string;
  /** What the server said it can do (from `server/discover` or `initialize`). */
  readonly capabilities: ServerCapabilities;
  /** The `server/discover` result of a modern server. */
  readonly discover: DiscoverResult | undefined;
}

/** Options of {@link connectClient}. */
export interface ConnectClientOptions {
  /** How long connecting (the probe, the handshake) may take. @default 10_000 */
  readonly timeoutMs?: number;
  /**
   * Runs on every message the server sends, after the era check, synchronously as it arrives (the
   * gateway relays progress and log messages here). @default none
   */
  readonly inbound?: InboundTap;
  /** Hears of every answer refused for its era (the call fails with a protocol error either way). @default none */
  readonly onViolation?: McpEraViolationListener;
  /**
   * The era found at an earlier connect of the same server configuration (see {@link priorOf}): no probe
   * then. The versioning page allows it ("re-probing if the cached assumption later fails"): drop it after
   * an era violation. @default none: probe
   */
  readonly prior?: PriorDiscovery;
}

/**
 * The options every client toolgate builds has: probe the era (`server/discover` first, then the
 * 2025-11-25 handshake), and serve nothing from the SDK's response cache (see {@link ToolIndexStore}).
 *
 * @example
 * const client = new Client({ name: 'toolgate', version: '0.1.0' }, clientOptions({ elicitation: { form: {} } }));
 */
export function clientOptions(capabilities: ClientCapabilities = {}, probeTimeoutMs = 10_000): ClientOptions {
  return {
    capabilities,
    versionNegotiation: { mode: 'auto', probe: { timeoutMs: probeTimeoutMs } },
    responseCacheStore: new ToolIndexStore(),
    jsonSchemaValidator: outputSchemaValidator,
    // The SDK walks a listing asked without a cursor itself: at most toolgate's bound of pages, and of items by
    // connectClient's listingTap (listing.ts).
    listMaxPages: MAX_LIST_PAGES,
  };
}

/** A new client of toolgate's, not yet connected. */
export function newClient(name = 'toolgate', capabilities: ClientCapabilities = {}, probeTimeoutMs = 10_000): Client {
  return new Client({ name, version: '0.1.0' }, clientOptions(capabilities, probeTimeoutMs));
}

/**
 * Connects `client` to `endpoint` in the server's era and installs the era check. A client that is
 * connected already keeps its connection (its transport is tapped in place). A client of the SDK v1
 * (`@modelcontextprotocol/sdk`) is refused: it cannot speak 2026-07-28 (pass its transport instead, the
 * interface is the same).
 */
export async function connectClient(
  client: Client,
  endpoint: McpEndpoint,
  options: ConnectClientOptions = {},
): Promise<McpSession> {
  assertClient(client);
  const known = sessions.get(client);
  if (known && client.getProtocolEra() !== undefined) return known;
  const timeoutMs = options.timeoutMs ?? 10_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new TypeError(`option "timeoutMs" must be a positive number, got ${describe(timeoutMs)}`);
  const state: { negotiated: EraState['negotiated'] } = { negotiated: undefined };
  const requests = trackRequests();
  const listing = listingTap();
  const outbound = (message: JSONRPCMessage): void => {
    requests.outbound(message);
    listing.outbound(message);
  };
  const check = eraCheck(state, requests, (violation) => options.onViolation?.(violation));
  const inbound = (message: JSONRPCMessage): JSONRPCMessage | null | undefined => {
    const checked = check(message);
    if (checked === null) return null;
    // A listing's page past MAX_LIST_ITEMS, within the SDK's own walk, is answered by an error (listing.ts).
    const bounded = listing.inbound(checked ?? message) ?? checked;
    const seen = bounded ?? message;
    requests.answered(seen);
    const tapped = options.inbound?.(seen);
    return tapped === undefined ? bounded : tapped;
  };
  const connected = client.getProtocolEra() !== undefined;
  if (connected) {
    const transport = client.transport;
    if (!transport) throw new TypeError('the MCP client given is connected but has no transport');
    tapTransport(transport, { inbound, outbound });
  } else {
    await client.connect(tapTransport(openTransport(endpoint), { inbound, outbound }), {
      timeout: timeoutMs,
      ...(options.prior ? { prior: options.prior } : {}),
    });
  }
  const era = client.getProtocolEra();
  const version = client.getNegotiatedProtocolVersion();
  if (era === undefined || version === undefined)
    throw new Error('the MCP client connected without a protocol version');
  state.negotiated = { era, version };
  const session: McpSession = {
    client,
    era,
    version,
    capabilities: client.getServerCapabilities() ?? {},
    discover: client.getDiscoverResult(),
  };
  sessions.set(client, session);
  return session;
}

/** The session of each client connected here: connecting it again (connectMcpServer on the gateway's client) taps nothing twice. */
const sessions = new WeakMap<Client, McpSession>();

/** The era verdict of a session, to connect the same server configuration again without probing. */
export function priorOf(session: McpSession): PriorDiscovery {
  return session.era === 'modern' && session.discover
    ? { kind: 'modern', discover: session.discover }
    : { kind: 'legacy' };
}

/** Throws a TypeError unless `client` is a Client of the SDK v2 (a v1 Client is named as such). */
export function assertClient(client: unknown): asserts client is Client {
  if (client instanceof Client) return;
  const candidate = client as { getProtocolEra?: unknown; getServerCapabilities?: unknown } | null;
  if (candidate !== null && typeof candidate === 'object' && typeof candidate.getProtocolEra === 'function') return;
  if (candidate !== null && typeof candidate === 'object' && typeof candidate.getServerCapabilities === 'function')
    throw new TypeError(
      'option "client" is a Client of @modelcontextprotocol/sdk 1.x, which cannot speak MCP 2026-07-28; pass a Client of @modelcontextprotocol/client 2.x, or its transport as option "transport" (v1 transports work unchanged)',
    );
  throw new TypeError(`option "client" must be a Client of @modelcontextprotocol/client, got ${describe(client)}`);
}

/**
 * The SDK's response cache, reduced to the tool index. The SDK keeps the `tools/list` result to mirror
 * `x-mcp-header` parameters into HTTP headers and to validate structured output; toolgate keeps that
 * (stale after `ttlMs` so no list is ever served from it), and stores nothing else: one client serves
 * every caller of the gateway, and what a caller reads must come from the server at the time of the
 * call, after the gate has decided it, never from an answer cached for someone else.
 */
export class ToolIndexStore implements ResponseCacheStore {
  readonly #entries = new Map<string, CacheEntry>();
  #stamp = 0;

  get(key: CacheKey): CacheEntry | undefined {
    return key.method === 'tools/list' ? this.#entries.get(keyOf(key)) : undefined;
  }
  set(key: CacheKey, entry: { value: string; expiresAt?: number; scope?: 'public' | 'private' }): number {
    const stamp = ++this.#stamp;
    if (key.method === 'tools/list')
      this.#entries.set(keyOf(key), {
        value: entry.value,
        stamp,
        expiresAt: 0,
        ...(entry.scope ? { scope: entry.scope } : {}),
      });
    return stamp;
  }
  delete(key: CacheKey): void {
    this.#entries.delete(keyOf(key));
  }
  evict(method: string): void {
    for (const key of [...this.#entries.keys()]) if (JSON.parse(key)[0] === method) this.#entries.delete(key);
  }
  clear(): void {
    this.#entries.clear();
  }
}

const keyOf = (key: CacheKey): string => JSON.stringify([key.method, key.params ?? '', key.partition ?? '']);
