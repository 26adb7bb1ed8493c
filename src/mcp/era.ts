/**
 * The two eras of MCP and the check that a server keeps to the one it announced. An era is a behaviour
 * family, not a version string (the SDK's word): `legacy` is every revision with the `initialize`
 * handshake, 2024-11-05 through 2025-11-25; `modern` is 2026-07-28, stateless, with `server/discover` and
 * `resultType` on every result. The client learns a server's era once, at connect (discover first, then
 * the 2025-11-25 handshake), and from then on holds the server to it: an answer in the other era's shape
 * is a protocol error, never read as best it can be (a 2025 answer to a 2026 request has no `resultType`,
 * a 2026 `input_required` read by a 2025 client looks like an empty success).
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import type { InboundTap } from './transport.js';

/** The 2026-07-28 revision: per-request `_meta`, `server/discover`, multi round-trip requests. */
export const MODERN_VERSION = '2026-07-28';
/** The newest revision with the `initialize` handshake, the one a modern client falls back to. */
export const LEGACY_VERSION = '2025-11-25';

/** `modern` (2026-07-28) or `legacy` (2025-11-25 and older, with `initialize`). */
export type McpEra = 'modern' | 'legacy';

/** A server that answered in an era it did not announce. */
export interface EraViolation {
  /** The era the server announced at connect. */
  readonly era: McpEra;
  /** The protocol version negotiated at connect. */
  readonly version: string;
  /** The method of the request the answer was for, or of the request the server sent. */
  readonly method: string | undefined;
  /** What was wrong, in a sentence that names it. */
  readonly detail: string;
}

/** Hears of a violation (the answer was refused either way). */
export type McpEraViolationListener = (violation: EraViolation) => void;

/** The JSON-RPC code of the error the refused answer is replaced with: the answer could not be used. */
export const ERA_VIOLATION_CODE = -32603;

/** `resultType` values of the modern era (the core's; `task` only with the tasks extension declared). */
const CORE_RESULT_TYPES: ReadonlySet<string> = new Set(['complete', 'input_required']);
/** `resultType` values that only exist in the modern era: a legacy server cannot mean them. */
const MODERN_ONLY_RESULT_TYPES: ReadonlySet<string> = new Set(['input_required', 'task']);

/** What the era check needs to know about the connection, read at every message. */
export interface EraState {
  /** The era and version the server announced; `undefined` while connecting (nothing is checked then). */
  readonly negotiated: { readonly era: McpEra; readonly version: string } | undefined;
  /** Whether the client declared the tasks extension (so `resultType: "task"` is an answer it can take). */
  readonly tasks: boolean;
}

/**
 * The inbound check of one connection: every answer is held to the era the server announced. A refused
 * answer is replaced by an error response for the same request (so the call fails with a message that
 * names what was wrong, and nothing is made of the answer); a request the modern era does not have is
 * taken off the wire. `report` hears of each violation (the gateway audits it and reconnects, which
 * probes the server's era again).
 *
 * `methodOf` names the method of an outbound request by id (for the message), see {@link trackRequests}.
 */
export function eraCheck(
  state: EraState,
  methodOf: (id: string | number) => string | undefined,
  report: (violation: EraViolation) => void,
): InboundTap {
  return (message) => {
    const negotiated = state.negotiated;
    if (!negotiated) return undefined;
    const violation = (method: string | undefined, detail: string): EraViolation => {
      const found = { era: negotiated.era, version: negotiated.version, method, detail };
      report(found);
      return found;
    };
    const body = message as Record<string, unknown>;
    const id = body['id'];
    const hasId = typeof id === 'string' || typeof id === 'number';
    // A request from the server.
    if (hasId && typeof body['method'] === 'string') {
      if (negotiated.era !== 'modern') return undefined;
      violation(
        body['method'],
        `sent a ${JSON.stringify(body['method'])} request, but ${negotiated.version} has no server-to-client requests (they travel in input_required results); it was dropped`,
      );
      return null;
    }
    if (!hasId) return undefined;
    const method = methodOf(id);
    const answered = `answered ${method ?? `request ${JSON.stringify(id)}`}`;
    const result = body['result'];
    if (result !== null && typeof result === 'object') {
      const resultType = (result as Record<string, unknown>)['resultType'];
      if (negotiated.era === 'modern') {
        if (resultType === undefined)
          return refused(
            id,
            violation(method, `${answered} without resultType (a ${LEGACY_VERSION} answer); the answer was not used`),
          );
        const allowed =
          typeof resultType === 'string' &&
          (CORE_RESULT_TYPES.has(resultType) || (resultType === 'task' && state.tasks));
        if (!allowed)
          return refused(
            id,
            violation(
              method,
              `${answered} with resultType ${JSON.stringify(resultType)}, which this client cannot take in ${negotiated.version}; the answer was not used`,
            ),
          );
        return undefined;
      }
      if (typeof resultType === 'string' && MODERN_ONLY_RESULT_TYPES.has(resultType))
        return refused(
          id,
          violation(
            method,
            `${answered} with resultType ${JSON.stringify(resultType)}, which only exists in ${MODERN_VERSION}; the answer was not used`,
          ),
        );
      return undefined;
    }
    const error = body['error'];
    if (negotiated.era === 'modern' && error !== null && typeof error === 'object') {
      if ((error as Record<string, unknown>)['code'] === -32022)
        return refused(
          id,
          violation(
            method,
            `refused ${negotiated.version} on ${method ?? `request ${JSON.stringify(id)}`} as an unsupported protocol version, although server/discover announced it`,
          ),
        );
    }
    return undefined;
  };
}

function refused(id: string | number, violation: EraViolation): JSONRPCMessage {
  return {
    jsonrpc: '2.0',
    id,
    error: { code: ERA_VIOLATION_CODE, message: eraViolationMessage(violation), data: { eraViolation: violation } },
  };
}

/** The message of a violation: what the server announced, and what it did then. */
export function eraViolationMessage(violation: EraViolation): string {
  return `protocol error: the server announced ${violation.version} (${violation.era} era) at connect, then ${violation.detail}`;
}

/**
 * Remembers the method of each request the client sends, by id, until its answer comes (so a refusal can
 * name the method). Returns the look-up and the outbound hook.
 */
export function trackRequests(): {
  readonly methodOf: (id: string | number) => string | undefined;
  readonly outbound: (message: JSONRPCMessage) => void;
  readonly answered: (message: JSONRPCMessage) => void;
} {
  const methods = new Map<string | number, string>();
  return {
    methodOf: (id) => methods.get(id),
    outbound: (message) => {
      const body = message as Record<string, unknown>;
      const id = body['id'];
      if ((typeof id === 'string' || typeof id === 'number') && typeof body['method'] === 'string')
        methods.set(id, body['method']);
    },
    answered: (message) => {
      const body = message as Record<string, unknown>;
      const id = body['id'];
      if ((typeof id === 'string' || typeof id === 'number') && !('method' in body)) methods.delete(id);
    },
  };
}
