/**
 * "The client's server" of a 2026-07-28 request, as the gateway's session handlers see it: what the client
 * declared in the request's `_meta`, and the log lines it asked for. The era has no server→client request,
 * so whatever else the session would ask of it fails the call (nothing falls through).
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  type ClientCapabilities,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { LoggingLevel } from '@modelcontextprotocol/sdk/types.js';
import { MODERN_VERSION } from '../mcp/index.js';
import { PEER_IN_ROUND, PEER_ROUND, type MrtrRound } from './mrtr.js';
import { heardAt, LOG_LEVELS } from './relay.js';

/** The client capabilities a 2026-07-28 request declares in its `_meta` (none when it has no context). */
export function declaredBy(ctx: ServerContext | undefined): ClientCapabilities {
  const envelope = ctx?.mcpReq.envelope as Record<string, unknown> | undefined;
  return (envelope?.['io.modelcontextprotocol/clientCapabilities'] as ClientCapabilities | undefined) ?? {};
}

/**
 * The log level a 2026-07-28 request carried in its `_meta` (`io.modelcontextprotocol/logLevel`; the SDK's
 * entry refuses one that is not a level), or undefined: it asked for no log line.
 */
export function logLevelOf(ctx: ServerContext | undefined): LoggingLevel | undefined {
  const envelope = ctx?.mcpReq.envelope as Record<string, unknown> | undefined;
  const level = envelope?.['io.modelcontextprotocol/logLevel'] as LoggingLevel | undefined;
  return level !== undefined && LOG_LEVELS.includes(level) ? level : undefined;
}

/** What a 2026-07-28 request's peer reads and tells of its request (modern.ts's ModernRequest): its own only. */
export interface PeerState {
  /** The request's handler context, once a handler runs. */
  readonly current: ServerContext | undefined;
  /** An upstream's request for `what` was refused (the client `declared` it, or did not). */
  refused(what: 'sampling' | 'elicitation', declared: boolean): void;
  /** The round of the request's asks (mrtr.ts roundOf), or undefined outside one. */
  round(): MrtrRound | undefined;
  /** Whether the request is in a round (its round made or not yet). */
  inRound(): boolean;
}

/** The peer's own members (on its prototype: a peer per request is one object and its proxy, no closures). */
class PeerTarget {
  readonly transport = undefined;
  readonly state: PeerState;

  constructor(state: PeerState) {
    this.state = state;
  }

  // Sampling and elicitation are shown as present so an upstream's request reaches createMessage /
  // elicitInput below, which refuse it and fail the call it came from (-32021 when not declared); roots
  // are not offered.
  getClientCapabilities(): ClientCapabilities | undefined {
    const { elicitation: _elicitation, sampling: _sampling, roots: _roots, ...rest } = declaredBy(this.state.current);
    return { ...rest, sampling: {}, elicitation: {} };
  }

  async notification(notification: { method: string; params?: Record<string, unknown> }): Promise<void> {
    const ctx = this.state.current;
    if (!ctx || notification.method !== 'notifications/message') return;
    if (!heardAt(notification.params?.['level'], logLevelOf(ctx))) return;
    await ctx.mcpReq.notify(notification as never);
  }

  async elicitInput(): Promise<never> {
    this.state.refused('elicitation', declaredBy(this.state.current).elicitation !== undefined);
    throw new ProtocolError(
      ProtocolErrorCode.MissingRequiredClientCapability,
      `toolgate gateway: a ${MODERN_VERSION} client cannot be sent an elicitation request`,
    );
  }

  async createMessage(): Promise<never> {
    this.state.refused('sampling', declaredBy(this.state.current).sampling !== undefined);
    throw new ProtocolError(
      ProtocolErrorCode.MissingRequiredClientCapability,
      `toolgate gateway: a ${MODERN_VERSION} client cannot be sent a sampling request`,
    );
  }

  [PEER_ROUND](): MrtrRound | undefined {
    return this.state.round();
  }

  [PEER_IN_ROUND](): boolean {
    return this.state.inRound();
  }
}

/** Anything the peer does not have throws (nothing falls through); one handler for every peer. */
const GUARDED: ProxyHandler<PeerTarget> = {
  get(object, key) {
    if (typeof key === 'symbol' || key === 'then' || key in object) return Reflect.get(object, key);
    throw new Error(`toolgate gateway: ${key} is not available for a ${MODERN_VERSION} request`);
  },
};

/**
 * What the session handlers ask of "the client's server" for a 2026-07-28 request: the client's
 * capabilities from the request's `_meta` (without elicitation, sampling and roots: the gateway cannot
 * send a 2026-07-28 client a request, so an ask is not put to it by elicitation and an upstream's
 * sampling or elicitation request is refused, never sent), and log lines (only when the request carried
 * a log level, and at or above it). Anything else the session asks of it throws: nothing falls through.
 * `state` is the request's own: what the peer reads (its context) and tells (a refused request) is its.
 */
export function peer(state: PeerState): Server {
  return new Proxy(new PeerTarget(state), GUARDED) as unknown as Server;
}
