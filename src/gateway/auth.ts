/**
 * Who is asking over HTTP: bearer JWTs (`jwtAuthenticator`), the subject a session is bound to, and the
 * loopback check of the listening address (`Host` against DNS rebinding is hosts.ts).
 */
import type { ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { JWTPayload } from 'jose';
import { jwtVerifier, type JwtKeyOptions } from '../jwt.js';

/** Verifies a bearer token; resolves with who it is and their scopes, or rejects. */
export type BearerAuthenticator = (token: string) => Promise<AuthInfo>;

/** Options of {@link jwtAuthenticator}; give exactly one of `publicKey`, `jwk`, `secret`, `jwks`, `jwksUrl`. */
export type JwtAuthOptions = JwtKeyOptions & {
  /**
   * Accept a token without an `exp` claim (it would be valid forever; the CLI's `--jwt-allow-no-exp`).
   * @default false: refused, naming why
   */
  readonly allowNoExp?: boolean;
};

/** A bearer token refused for a reason that may be told to the client (the 401 names it). */
export class BearerRefusal extends Error {
  override readonly name = 'BearerRefusal';
}

/**
 * A bearer authenticator for JWTs, verified with jose (signature, `exp`/`nbf`, and `iss`/`aud` when set);
 * a token without `exp` is refused unless `allowNoExp`.
 * Scopes come from the `scope` claim (space-separated, OAuth) or `scp` (a list); the client id from `sub`
 * (else `client_id`, `azp`). A token with none of the three is refused: it names no one, and sessions are
 * bound to who opened them. `extra.subject` is the issuer, claim and value (`["iss","sub","alice"]` as
 * JSON), so `sub: "alice"` and `client_id: "alice"` (or two issuers' "alice") are different subjects.
 * Scopes are tool names (the "Tool allowlists" spec's caller layer). A verified token is not verified again
 * until its `exp` — with `jwksUrl`, for at most 10 minutes, as long as jose keeps the key set, so a key
 * withdrawn from the set stops being accepted as it would without the cache (up to 10,000 tokens kept; the
 * answer is frozen and shared by its requests).
 */
export function jwtAuthenticator(options: JwtAuthOptions): BearerAuthenticator {
  const verify = jwtVerifier(options, 'jwtAuthenticator');
  const allowNoExp = options.allowNoExp ?? false;
  if (typeof allowNoExp !== 'boolean')
    throw new TypeError(`jwtAuthenticator option "allowNoExp" must be a boolean, got ${typeof allowNoExp}`);
  // Verified tokens by their exact text, each kept until its `exp` (issue 25: a signature check per request
  // costs more than the gateway's own work) — with a remote key set, for at most as long as jose keeps the
  // set before fetching it again, so a key removed from the set is not honoured longer through this cache
  // than it would be without it. A token without `exp` is verified every time; the oldest entry goes first
  // when the cache is full.
  const keptMs = options.jwksUrl !== undefined ? REMOTE_KEYS_MS : Infinity;
  const verified = new Map<string, { readonly auth: AuthInfo; readonly until: number }>();
  return async (token) => {
    const known = verified.get(token);
    if (known !== undefined) {
      if (Date.now() < known.until) return known.auth;
      verified.delete(token);
    }
    const payload = await verify(token);
    if (payload.exp === undefined && !allowNoExp)
      throw new BearerRefusal(
        'the bearer token has no expiry ("exp" claim): a token without one would be valid forever, so it is refused (the gateway owner can allow it: --jwt-allow-no-exp)',
      );
    const subject = subjectOf(payload);
    const auth: AuthInfo = Object.freeze({
      token,
      clientId: subject.value,
      scopes: Object.freeze(scopesOf(payload)) as string[],
      ...(payload.exp !== undefined ? { expiresAt: payload.exp } : {}),
      extra: Object.freeze({
        claims: Object.freeze(payload),
        subject: JSON.stringify([typeof payload.iss === 'string' ? payload.iss : null, subject.claim, subject.value]),
      }),
    });
    if (payload.exp !== undefined) {
      if (verified.size >= VERIFIED_TOKENS) verified.delete(verified.keys().next().value!);
      verified.set(token, { auth, until: Math.min(payload.exp * 1000, Date.now() + keptMs) });
    }
    return auth;
  };
}

/** How many verified tokens one authenticator keeps. */
const VERIFIED_TOKENS = 10_000;

/** How long a token verified with a remote key set is kept: jose's own cache of the set (`cacheMaxAge`, 10 minutes). */
const REMOTE_KEYS_MS = 10 * 60_000;

function subjectOf(payload: JWTPayload): { claim: string; value: string } {
  for (const claim of ['sub', 'client_id', 'azp']) {
    const value = payload[claim];
    if (typeof value === 'string' && value !== '') return { claim, value };
  }
  throw new Error('the token names no subject (no "sub", "client_id" or "azp" claim)');
}

/**
 * The identity a session is bound to: the authenticator's `extra.subject` when it gives one (the JWT
 * authenticator does: issuer, claim and value), else the client id. An empty one is refused.
 */
export function sessionSubject(auth: AuthInfo): string {
  const given = auth.extra?.['subject'];
  const subject = typeof given === 'string' ? given : JSON.stringify([null, 'clientId', auth.clientId]);
  if (typeof auth.clientId !== 'string' || auth.clientId === '')
    throw new Error('the authenticator gave no client id for the token');
  return subject;
}

function scopesOf(payload: JWTPayload): string[] {
  const scope = payload['scope'];
  if (typeof scope === 'string') return scope.split(/\s+/).filter(Boolean);
  const scp = payload['scp'];
  if (Array.isArray(scp)) return scp.filter((s): s is string => typeof s === 'string');
  if (typeof scp === 'string') return scp.split(/\s+/).filter(Boolean);
  return [];
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** True for the addresses the gateway listens on without `allowNonLoopback`: 127.0.0.1, ::1, localhost. */
export function isLoopbackAddress(host: string): boolean {
  return LOOPBACK.has(host);
}

/** @internal A JSON reply, with a WWW-Authenticate challenge when given. */
export function reply(res: ServerResponse, status: number, body: unknown, challenge?: string): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  if (challenge) res.setHeader('www-authenticate', challenge);
  res.end(JSON.stringify(body));
}

/**
 * The audience check (RFC 8707): the token must name this resource — `true`: the gateway's own resource URL
 * (a trailing slash aside), a string: that audience, `false`: not checked.
 */
export function audienceMatches(auth: AuthInfo, option: boolean | string, resource: string): boolean {
  if (option === false) return true;
  const expected = option === true ? resource : option;
  const same = (a: string): boolean =>
    a === expected || (option === true && a.replace(/\/$/, '') === expected.replace(/\/$/, ''));
  if (auth.resource && same(auth.resource.href)) return true;
  const aud = (auth.extra?.['claims'] as { aud?: unknown } | undefined)?.aud;
  if (typeof aud === 'string') return same(aud);
  return Array.isArray(aud) && aud.some((a) => typeof a === 'string' && same(a));
}
