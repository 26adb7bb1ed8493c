/**
 * An upstream's own 2026-07-28 round relayed to a client: the upstream's requestState wrapped with what it is
 * bound to (principal, tenant, request, arguments, upstream, expiry) and signed under the owner's secret, so
 * the client can neither change it nor use it for another request; opened once per retry. It is signed, not
 * encrypted: the client can read the upstream's state inside it.
 * The gateway's own ask round is mrtr.ts; the two are told apart by the wrapper's kind (stateKindOf).
 */
import { createHmac, randomUUID } from 'node:crypto';
import { hashOf, macOf, sameMac } from '../crypto.js';
import { consumeNonce } from '../gate/index.js';
import { canonical } from '../names.js';
import { parseJsonText } from '../json-text.js';
import { MRTR_TTL_MS, stateKeyOf, type MrtrStores, type MrtrWho } from './mrtr.js';

/**
 * What an upstream's own round is bound to when the gateway relays it to a 2026-07-28 client: who asks,
 * the request (method, canonical tool / resource URI / prompt, a digest of its arguments).
 */
export interface UpstreamRoundBinding {
  readonly subject: string | null;
  readonly caller: string | null;
  readonly tenant: string | null;
  readonly method: string;
  readonly target: string;
  readonly argsHash: string;
}

/** What the wrapper of an upstream's state holds (signed whole). */
interface UpstreamWrapperBody extends UpstreamRoundBinding {
  readonly upstream: string;
  /** The upstream's own requestState, or null when it gave none. */
  readonly state: string | null;
  readonly expiresAt: number;
  readonly nonce: string;
}

/** The wrapper's kind: an upstream's round, never the gateway's own ask (whose state carries a binding). */
const UPSTREAM_KIND = 'upstream';

/** The binding of a request's upstream round: the canonical target and the digest of its arguments. */
export function upstreamRoundBinding(
  who: Pick<MrtrWho, 'subject' | 'caller' | 'tenant'>,
  method: 'tools/call' | 'resources/read' | 'prompts/get',
  name: string,
  args: unknown,
): UpstreamRoundBinding {
  return {
    subject: who.subject,
    caller: who.caller,
    tenant: who.tenant,
    method,
    target: method === 'resources/read' ? name : canonical(name),
    argsHash: hashOf(args ?? {}),
  };
}

/**
 * Whether `args` is plain JSON data the binding's digest can carry (finite numbers, strings, booleans, null,
 * arrays and plain objects of them): what is checked before a call runs when its binding is digested later
 * (modern.ts), so a call whose binding could not be made is refused before anything is sent, as when the
 * binding was made first. False for anything else (a non-finite number: JSON text's `1e400`).
 */
export function bindable(args: unknown, depth = 0): boolean {
  if (args === null || args === undefined) return depth === 0 || args === null;
  switch (typeof args) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(args);
    case 'object': {
      if (depth > 512) return false;
      if (Array.isArray(args)) {
        for (let i = 0; i < args.length; i++) if (!bindable(args[i], depth + 1)) return false;
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(args);
      if (proto !== Object.prototype && proto !== null) return false;
      if (typeof (args as { toJSON?: unknown }).toJSON === 'function') return false;
      for (const key of Object.keys(args))
        if (!bindable((args as Record<string, unknown>)[key], depth + 1)) return false;
      return true;
    }
    default:
      return false;
  }
}

/** The key an upstream round's wrapper is signed under: the owner's secret (bound to the boot, as a state). */
function wrapperKeyOf(stores: MrtrStores): Uint8Array {
  return createHmac('sha256', stateKeyOf(stores.secret, stores.boot)).update('toolgate.mrtr-upstream').digest();
}

/**
 * Whose round a request's echoed requestState belongs to, by its kind (its MAC is checked on opening):
 * `upstream` (the wrapper of an upstream's round), `gateway` (the gateway's own ask), `none`, or
 * `malformed` (neither: refused before anything runs).
 */
export function stateKindOf(state: unknown): 'none' | 'upstream' | 'gateway' | 'malformed' {
  if (state === undefined) return 'none';
  if (typeof state !== 'string' || state.length === 0 || state.length > 65_536) return 'malformed';
  let parsed: { kind?: unknown; binding?: unknown } | null;
  try {
    parsed = parseJsonText(Buffer.from(state, 'base64url').toString('utf8')) as typeof parsed;
  } catch {
    return 'malformed';
  }
  if (parsed === null || typeof parsed !== 'object') return 'malformed';
  if (parsed.kind === UPSTREAM_KIND) return 'upstream';
  return parsed.kind === undefined && parsed.binding !== undefined ? 'gateway' : 'malformed';
}

/**
 * The requestState a 2026-07-28 client is given for an upstream's round: the upstream's own state wrapped
 * with what it is bound to and an expiry, signed under the owner's secret (readable, never changeable by the
 * client, never usable by another principal or for another request).
 */
export function wrapUpstreamState(
  stores: MrtrStores,
  binding: UpstreamRoundBinding,
  upstream: string,
  state: string | undefined,
): string {
  const body: UpstreamWrapperBody = {
    ...binding,
    upstream,
    state: state ?? null,
    expiresAt: Date.now() + (stores.ttlMs ?? MRTR_TTL_MS),
    nonce: randomUUID(),
  };
  const mac = macOf(wrapperKeyOf(stores), ['toolgate.mrtr-upstream', body]);
  return Buffer.from(JSON.stringify({ v: 1, kind: UPSTREAM_KIND, body, mac })).toString('base64url');
}

/**
 * Opens the wrapper a retry echoes: the upstream and its own state, once, when the wrapper is one a
 * replica signed, binds this very request and caller, has not expired and was not used before (its nonce
 * consumed in the shared NonceStore); else why not (the retry is refused, nothing is sent upstream).
 */
export async function openUpstreamState(
  stores: MrtrStores,
  wrapped: unknown,
  want: UpstreamRoundBinding,
): Promise<{ upstream: string; state: string | undefined } | { problem: string }> {
  if (stateKindOf(wrapped) !== 'upstream')
    return { problem: 'the requestState is malformed (not one the gateway issued)' };
  const parsed = parseJsonText(Buffer.from(wrapped as string, 'base64url').toString('utf8')) as {
    v?: unknown;
    body?: UpstreamWrapperBody;
    mac?: unknown;
  };
  const body = parsed.body;
  if (parsed.v !== 1 || body === null || typeof body !== 'object')
    return { problem: 'the requestState is malformed (not one the gateway issued)' };
  if (!sameMac(parsed.mac, macOf(wrapperKeyOf(stores), ['toolgate.mrtr-upstream', body])))
    return { problem: 'the requestState was not issued by this gateway or was changed' };
  if (body.subject !== want.subject || body.caller !== want.caller)
    return { problem: 'the requestState was issued to another principal' };
  if (body.tenant !== want.tenant) return { problem: 'the requestState was issued in another tenant' };
  if (body.method !== want.method || body.target !== want.target)
    return {
      problem: `the requestState was issued for another request (${body.method} ${JSON.stringify(body.target)})`,
    };
  if (body.argsHash !== want.argsHash) return { problem: 'the requestState was issued for other arguments' };
  if (!(typeof body.expiresAt === 'number' && body.expiresAt > Date.now()))
    return { problem: 'the requestState has expired' };
  let fresh: boolean;
  try {
    fresh = await consumeNonce(stores.nonces, body.nonce, (stores.ttlMs ?? MRTR_TTL_MS) * 2);
  } catch {
    fresh = false;
  }
  if (!fresh) return { problem: 'this requestState was used already' };
  return { upstream: body.upstream, state: body.state ?? undefined };
}
