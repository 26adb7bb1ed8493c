/**
 * Who may answer: a bearer JWT (verified with jose, loaded on first use), a signed single-use link, or a
 * session cookie that one of those started. Signed values are `base64url(JSON).hex-HMAC` under the
 * inbox's secret; CSRF tokens are HMACs of the session they belong to.
 */
import { jwtVerifier, type JwtKeyOptions } from '../jwt.js';
import { macOf, sameMac } from '../crypto.js';

/** Verifies a bearer token and resolves with the approver it names (rejects when it does not verify). */
export type ApproverAuthenticator = (token: string) => Promise<string>;

/** Options of {@link jwtApprover}: how to verify the token, and the claim naming the approver. */
export interface JwtApproverOptions extends JwtKeyOptions {
  /** The claim naming the approver. @default 'email' when `email_verified` is true, else 'sub' */
  readonly claim?: string;
}

/**
 * An authenticator for OIDC ID tokens or any JWT: signature, `exp`/`nbf`, and `iss`/`aud` when set (set
 * them for OIDC). The approver is the `claim` (default: `email`, else `sub`); a token without it is refused.
 */
export function jwtApprover(options: JwtApproverOptions): ApproverAuthenticator {
  const verify = jwtVerifier(options, 'jwtApprover');
  const claims = options.claim === undefined ? ['email', 'sub'] : [options.claim];
  return async (token) => {
    const payload = await verify(token);
    for (const claim of claims) {
      const value = payload[claim];
      // An identity provider may let anyone set an unverified address: `email` names an approver only
      // when `email_verified` is true (OIDC Core 5.1), else the next claim (`sub`) does.
      if (claim === 'email' && options.claim === undefined && payload['email_verified'] !== true) continue;
      if (typeof value === 'string' && value !== '') return value;
    }
    throw new Error(`the token has no ${claims.join(' or ')} claim naming the approver`);
  };
}

/** What a signed link carries. */
export interface LinkClaims {
  /** The approver the link was made for. */
  readonly approver: string;
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
export function verifyValue(secret: Uint8Array, purpose: string, value: unknown): Record<string, unknown> | null {
  if (typeof value !== 'string' || value.length > 8192) return null;
  const dot = value.indexOf('.');
  if (dot <= 0) return null;
  const body = value.slice(0, dot);
  if (!sameMac(value.slice(dot + 1), macOf(secret, [purpose, body]))) return null;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
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
  const { approver, approval, effect, expiresAt, nonce } = claims;
  if (typeof approver !== 'string' || approver === '' || typeof nonce !== 'string' || typeof expiresAt !== 'number')
    return 'the link is malformed';
  if (approval !== undefined && typeof approval !== 'string') return 'the link is malformed';
  if (effect !== undefined && effect !== 'allow' && effect !== 'deny') return 'the link is malformed';
  if (expiresAt <= now) return 'the link has expired';
  return {
    approver,
    ...(approval !== undefined ? { approval } : {}),
    ...(effect !== undefined ? { effect } : {}),
    expiresAt,
    nonce,
  };
}

/** A signed-in approver's session (kept in an HttpOnly, SameSite=Strict cookie). */
export interface Session {
  readonly approver: string;
  /** Epoch ms. */
  readonly expiresAt: number;
  readonly id: string;
}

export function sessionOf(secret: Uint8Array, cookie: unknown, now: number): Session | null {
  const claims = verifyValue(secret, 'toolgate.inbox.session', cookie);
  if (claims === null) return null;
  const { approver, expiresAt, id } = claims;
  if (typeof approver !== 'string' || typeof expiresAt !== 'number' || typeof id !== 'string') return null;
  if (expiresAt <= now) return null;
  return { approver, expiresAt, id };
}

/** The CSRF token of one session (or bearer token): forms must carry it back. */
export function csrfToken(secret: Uint8Array, key: string): string {
  return macOf(secret, ['toolgate.inbox.csrf', key]);
}

export function sameCsrf(secret: Uint8Array, key: string, given: unknown): boolean {
  return sameMac(given, csrfToken(secret, key));
}
