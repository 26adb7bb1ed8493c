/**
 * Who may answer: a bearer JWT (verified with jose, loaded on first use), a signed single-use link, or a
 * session cookie that one of those started. Signed values are `base64url(JSON).hex-HMAC` under the
 * inbox's secret; CSRF tokens are HMACs of the session they belong to.
 */
import type { ApproverIdentity } from '../contracts/approval.js';
import { jwtVerifier, type JwtKeyOptions } from '../jwt.js';
import { describe } from '../names.js';
import { parseJsonText } from '../json-text.js';
import { macOf, sameMac } from '../crypto.js';

/**
 * Verifies a bearer token and resolves with the approver it names — a name, or an identity bound to the
 * tenants it acts for — and rejects when it does not verify.
 */
export type ApproverAuthenticator = (token: string) => Promise<string | ApproverIdentity>;

/** Options of {@link jwtApprover}: how to verify the token, and the claims naming the approver. */
export interface JwtApproverOptions extends JwtKeyOptions {
  /**
   * The claim naming the approver. `email` names them only when `email_verified` is true, whether it is
   * the default or asked for. @default 'email' when `email_verified` is true, else 'sub'
   */
  readonly claim?: string;
  /**
   * The claim holding the tenant (a string) or tenants (a list) the approver acts for: they see only those
   * tenants' requests, and a token without the claim is refused. @default not bound to a tenant
   */
  readonly tenantClaim?: string;
}

/**
 * An authenticator for OIDC ID tokens or any JWT: signature, `exp`/`nbf`, and `iss`/`aud` when set (set
 * them for OIDC). The approver is the `claim` (default: `email`, else `sub`); a token without it is refused.
 */
export function jwtApprover(options: JwtApproverOptions): ApproverAuthenticator {
  const verify = jwtVerifier(options, 'jwtApprover');
  if (options.claim !== undefined && (typeof options.claim !== 'string' || options.claim === ''))
    throw new TypeError(`jwtApprover option "claim" must be a claim name, got ${describe(options.claim)}`);
  if (options.tenantClaim !== undefined && (typeof options.tenantClaim !== 'string' || options.tenantClaim === ''))
    throw new TypeError(`jwtApprover option "tenantClaim" must be a claim name, got ${describe(options.tenantClaim)}`);
  const claims = options.claim === undefined ? ['email', 'sub'] : [options.claim];
  return async (token) => {
    const payload = await verify(token);
    let id: string | undefined;
    for (const claim of claims) {
      const value = payload[claim];
      // An identity provider may let anyone set an unverified address: `email` names an approver only
      // when `email_verified` is true (OIDC Core 5.1), asked for or not; by default the next claim (`sub`) does.
      if (claim === 'email' && payload['email_verified'] !== true) continue;
      if (typeof value === 'string' && value !== '') {
        id = value;
        break;
      }
    }
    if (id === undefined)
      throw new Error(
        claims.includes('email') && claims.length === 1
          ? 'the token has no verified email (email_verified is not true) naming the approver'
          : `the token has no ${claims.join(' or ')} claim naming the approver`,
      );
    if (options.tenantClaim === undefined) return id;
    const value = payload[options.tenantClaim];
    const tenants = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(tenants) || tenants.length === 0 || tenants.some((t) => typeof t !== 'string' || t === ''))
      throw new Error(`the token has no ${options.tenantClaim} claim naming the approver's tenants`);
    return { id, tenants: tenants as string[] };
  };
}

/** An authenticator's answer as an identity (a bare name is not bound to a tenant); null when it is no identity. */
export function identityOf(value: unknown): ApproverIdentity | null {
  if (typeof value === 'string') return value === '' ? null : { id: value, tenants: null };
  if (typeof value !== 'object' || value === null) return null;
  const { id, tenants } = value as { id?: unknown; tenants?: unknown };
  if (typeof id !== 'string' || id === '') return null;
  if (tenants === null) return { id, tenants: null };
  if (!Array.isArray(tenants) || tenants.some((t) => typeof t !== 'string')) return null;
  return { id, tenants: [...(tenants as string[])] };
}

/** What a signed link carries. */
export interface LinkClaims {
  /** The approver the link was made for. */
  readonly approver: string;
  /** The tenants the link acts for; absent: not bound to a tenant. */
  readonly tenants?: readonly string[];
  /** The approval it answers; absent: a sign-in link to the whole inbox. */
  readonly approval?: string;
  /** The one answer it may give; absent: either. */
  readonly effect?: 'allow' | 'deny';
  /** Epoch ms. */
  readonly expiresAt: number;
  /** Single use: consumed on use. */
  readonly nonce: string;
}

function b64(value: string): string {
  return Buffer.from(value, 'utf8').toString('base64url');
}

/** Signs `claims` under `secret` with a purpose, so a value signed for one purpose is no use for another. */
export function signValue(secret: Uint8Array, purpose: string, claims: object): string {
  const body = b64(JSON.stringify(claims));
  return `${body}.${macOf(secret, [purpose, body])}`;
}

/** The claims of a value {@link signValue} made for `purpose`, or null when it does not verify. */
function verifyValue(secret: Uint8Array, purpose: string, value: unknown): Record<string, unknown> | null {
  if (typeof value !== 'string' || value.length > 8192) return null;
  const dot = value.indexOf('.');
  if (dot <= 0) return null;
  const body = value.slice(0, dot);
  if (!sameMac(value.slice(dot + 1), macOf(secret, [purpose, body]))) return null;
  try {
    const parsed: unknown = parseJsonText(Buffer.from(body, 'base64url').toString('utf8'));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** Reads verified link claims, or says what is wrong with them. */
export function linkClaims(secret: Uint8Array, token: unknown, now: number): LinkClaims | string {
  const claims = verifyValue(secret, 'toolgate.inbox.link', token);
  if (claims === null) return 'the link is not signed by this inbox or was altered';
  const { approver, tenants, approval, effect, expiresAt, nonce } = claims;
  if (typeof approver !== 'string' || approver === '' || typeof nonce !== 'string' || typeof expiresAt !== 'number')
    return 'the link is malformed';
  if (tenants !== undefined && (!Array.isArray(tenants) || tenants.some((t) => typeof t !== 'string')))
    return 'the link is malformed';
  if (approval !== undefined && typeof approval !== 'string') return 'the link is malformed';
  if (effect !== undefined && effect !== 'allow' && effect !== 'deny') return 'the link is malformed';
  if (expiresAt <= now) return 'the link has expired';
  return {
    approver,
    ...(tenants !== undefined ? { tenants: tenants as string[] } : {}),
    ...(approval !== undefined ? { approval } : {}),
    ...(effect !== undefined ? { effect } : {}),
    expiresAt,
    nonce,
  };
}

/** A signed-in approver's session (kept in an HttpOnly, SameSite=Strict cookie). */
export interface Session {
  readonly approver: string;
  /** The tenants the session acts for (from the link that started it); null: not bound. */
  readonly tenants: readonly string[] | null;
  /** Epoch ms. */
  readonly expiresAt: number;
  readonly id: string;
}

/** The verified session of a cookie, or null. */
export function sessionOf(secret: Uint8Array, cookie: unknown, now: number): Session | null {
  const claims = verifyValue(secret, 'toolgate.inbox.session', cookie);
  if (claims === null) return null;
  const { approver, tenants, expiresAt, id } = claims;
  if (typeof approver !== 'string' || typeof expiresAt !== 'number' || typeof id !== 'string') return null;
  if (
    tenants !== undefined &&
    tenants !== null &&
    (!Array.isArray(tenants) || tenants.some((t) => typeof t !== 'string'))
  )
    return null;
  if (expiresAt <= now) return null;
  return { approver, tenants: Array.isArray(tenants) ? (tenants as string[]) : null, expiresAt, id };
}

/** The CSRF token of one session (or bearer token): forms must carry it back. */
export function csrfToken(secret: Uint8Array, key: string): string {
  return macOf(secret, ['toolgate.inbox.csrf', key]);
}

export function sameCsrf(secret: Uint8Array, key: string, given: unknown): boolean {
  return sameMac(given, csrfToken(secret, key));
}
