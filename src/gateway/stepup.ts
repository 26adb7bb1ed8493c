/**
 * Step-up instead of a flat refusal (the 2026-07-28 authorization page, RFC 6750 §3.1): a tool call the
 * caller layer refused (the token's scopes do not cover the tool) whose policy's scope map names scopes
 * that would cover it is answered HTTP 403 with `WWW-Authenticate: Bearer error="insufficient_scope",
 * scope="…"`, so a client can ask its user for a token with more. The scope named is the narrowest one
 * that covers the tool (fewest tools, then by name): one challenge with everything the call needs. The
 * challenge also names the Protected Resource Metadata (`resource_metadata`) where the gateway serves it. The
 * call was refused by the gate as ever (nothing ran); only the HTTP answer changes, for 2026-07-28
 * requests (a 2025-era session's answers share one HTTP stream, so it keeps the refusal in the body).
 */
import { canonical } from '../names.js';
import type { ScopeMap } from '../types.js';

/** What a scope-shaped refusal asks for. */
export interface StepUp {
  /** The scopes to ask for, space-separated (RFC 6750's `scope`). */
  readonly scope: string;
  /** The refused tool, as named in the call. */
  readonly tool: string;
}

/** The scopes of `map` that would let the caller layer permit `tool`, narrowest first; undefined when none. */
export function stepUpFor(map: ScopeMap, tool: string): StepUp | undefined {
  const form = canonical(tool);
  const covering = Object.entries(map)
    .filter(([, names]) => names.some((name) => canonical(name) === form))
    .sort(([a, x], [b, y]) => x.length - y.length || (a < b ? -1 : a > b ? 1 : 0));
  // A scope name that cannot sit in a quoted-string (RFC 6750: %x21 / %x23-5B / %x5D-7E) is not offered.
  const usable = covering.find(([scope]) => /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope));
  return usable ? { scope: usable[0], tool } : undefined;
}

/**
 * The `WWW-Authenticate` value of a step-up; `resourceMetadata` (the Protected Resource Metadata URL) is
 * named as the 2026-07-28 authorization page's example does, so the client can find where to ask.
 */
export function challengeOf(stepUp: StepUp, resourceMetadata?: string): string {
  const metadata = resourceMetadata
    ? `, resource_metadata="${resourceMetadata.replace(/["\\]/g, encodeURIComponent)}"`
    : '';
  return `Bearer error="insufficient_scope", scope="${stepUp.scope}"${metadata}, error_description="the token's scopes do not cover the tool"`;
}

/**
 * One 2026-07-28 HTTP exchange, made per request by the handler that answers it (modern.ts, modern-fast.ts)
 * and handed down with the request (RelayedRequest.exchange), never shared between requests.
 */
export interface Exchange {
  /** The request declared the tasks extension (read from its body before the SDK runs). */
  readonly tasks: boolean;
  /** Set by a call the caller layer refused (calls.ts); read when the exchange is answered (403 and the challenge). */
  stepUp?: StepUp;
}
