/**
 * JWT verification with jose (loaded on first use, so a module that offers JWT sign-in does not require
 * jose until it is used): the key selection shared by the gateway's bearer authenticator and the inbox's.
 */
import type { JWK, JSONWebKeySet, JWTPayload } from 'jose';
import { describe } from './names.js';

/** How to verify a JWT; give exactly one of `publicKey`, `jwk`, `secret`, `jwks`, `jwksUrl`. */
export interface JwtKeyOptions {
  /** A PEM public key (SPKI), for RS*, PS*, ES* and EdDSA tokens. */
  readonly publicKey?: string;
  /** A public JWK. */
  readonly jwk?: JWK;
  /** A shared secret, for HS* tokens. */
  readonly secret?: string | Uint8Array;
  /** A JSON Web Key Set given inline. */
  readonly jwks?: JSONWebKeySet;
  /** The URL of a JSON Web Key Set (fetched and cached by jose). */
  readonly jwksUrl?: string | URL;
  /** The algorithms accepted. @default jose's default for the key (a PEM key needs it: @default ['RS256'] then) */
  readonly algorithms?: readonly string[];
  /** The required `iss`. @default not checked */
  readonly issuer?: string;
  /** The required `aud`. @default not checked */
  readonly audience?: string;
}

/** A verifier of `options`' tokens: signature, `exp`/`nbf`, and `iss`/`aud` when set; rejects otherwise. */
export function jwtVerifier(options: JwtKeyOptions, who: string): (token: string) => Promise<JWTPayload> {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`${who} options must be an object, got ${describe(options)}`);
  const given = (['publicKey', 'jwk', 'secret', 'jwks', 'jwksUrl'] as const).filter((k) => options[k] !== undefined);
  if (given.length !== 1)
    throw new TypeError(
      `${who} needs exactly one of "publicKey", "jwk", "secret", "jwks", "jwksUrl"; got ${given.length === 0 ? 'none' : given.join(', ')}`,
    );
  const verifyOptions = {
    ...(options.issuer !== undefined ? { issuer: options.issuer } : {}),
    ...(options.audience !== undefined ? { audience: options.audience } : {}),
    ...(options.algorithms
      ? { algorithms: [...options.algorithms] }
      : options.publicKey
        ? { algorithms: ['RS256'] }
        : {}),
  };
  let verifier: Promise<(token: string) => Promise<{ payload: JWTPayload }>> | null = null;
  const load = () =>
    import('jose').then(async (jose) => {
      if (options.jwksUrl !== undefined) {
        const set = jose.createRemoteJWKSet(
          options.jwksUrl instanceof URL ? options.jwksUrl : new URL(options.jwksUrl),
        );
        return (token: string) => jose.jwtVerify(token, set, verifyOptions);
      }
      if (options.jwks !== undefined) {
        const set = jose.createLocalJWKSet(options.jwks);
        return (token: string) => jose.jwtVerify(token, set, verifyOptions);
      }
      const key =
        options.publicKey !== undefined
          ? await jose.importSPKI(options.publicKey, verifyOptions.algorithms?.[0] ?? 'RS256')
          : options.jwk !== undefined
            ? await jose.importJWK(options.jwk)
            : typeof options.secret === 'string'
              ? new TextEncoder().encode(options.secret)
              : options.secret!;
      return (token: string) => jose.jwtVerify(token, key, verifyOptions);
    });
  return async (token) => {
    verifier ??= load();
    return (await (await verifier)(token)).payload;
  };
}
