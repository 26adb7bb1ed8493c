/**
 * Which `Host` (and `Origin`) a request may name: the DNS-rebinding defence as an allow-list. A request
 * naming any other host is refused before anything is authenticated or decided. Behind a proxy listed as
 * trusted (by the address the connection comes from), the proxy's `X-Forwarded-Host` is the host checked
 * and `X-Forwarded-For` the client's address; from anyone else those headers are ignored.
 */
import type { IncomingMessage } from 'node:http';
import { isLoopbackAddress } from './auth.js';

/** What the allow-list is built from. */
export interface HostRules {
  /** The address the gateway listens on. */
  readonly bound: string;
  /** The URL clients use (the resource): its host is allowed. */
  readonly publicUrl: string;
  /** More hosts allowed (`name` any port, `name:port` that port only). */
  readonly allowed: readonly string[];
  /** The addresses of proxies whose `X-Forwarded-*` headers are believed. */
  readonly trustedProxies: readonly string[];
}

/** The checker of one listener. */
export interface HostCheck {
  /** Null when the request's host (and origin) is allowed, else why not. */
  refuse(req: IncomingMessage): string | null;
  /** The client's address: the first `X-Forwarded-For` hop from a trusted proxy, else the peer's. */
  clientAddress(req: IncomingMessage): string;
  /** The allowed host entries, for the start-up log. */
  readonly allowed: readonly string[];
}

interface Entry {
  readonly hostname: string;
  readonly port: string;
}

const WILDCARD = new Set(['0.0.0.0', '::', '[::]', '']);

/** How many Host texts one listener keeps the answer for. */
const HOSTS_KEPT = 256;

function parse(host: string): Entry | null {
  try {
    const url = new URL(`http://${host.trim()}`);
    if (url.pathname !== '/' || url.username || url.search) return null;
    return { hostname: url.hostname.toLowerCase(), port: url.port };
  } catch {
    return null;
  }
}

function peer(address: string | undefined): string {
  const a = address ?? '';
  return a.startsWith('::ffff:') ? a.slice(7) : a;
}

/**
 * The allow-list for a listener: on a loopback address the loopback names (any port); the public URL's host
 * unless it is a wildcard address; and `allowed`. A listener whose list would be empty (a wildcard bind
 * with no host named) is refused: every request would be.
 */
export function hostCheck(rules: HostRules): HostCheck {
  const entries: string[] = [];
  if (isLoopbackAddress(rules.bound)) entries.push('127.0.0.1', '[::1]', 'localhost');
  const publicHost = new URL(rules.publicUrl).host;
  if (!WILDCARD.has(new URL(rules.publicUrl).hostname)) entries.push(publicHost);
  for (const given of rules.allowed) {
    if (parse(given) === null || given.includes('/') || given.trim() === '')
      throw new TypeError(
        `an allowed host must be a host name or address with an optional port, got ${JSON.stringify(given)}`,
      );
    entries.push(given.trim());
  }
  if (entries.length === 0)
    throw new TypeError(
      `listening on ${rules.bound} (every interface), no Host is allowed: name the hosts clients use (--allowed-host, or --resource with the public URL)`,
    );
  const parsed = entries.map((e) => parse(e)!);
  const trusted = new Set(rules.trustedProxies.map((p) => peer(p.trim())));
  // What each Host (or Origin host) text came to, for the few texts a listener sees (issue 25: a URL parsed
  // per request); at most HOSTS_KEPT of up to 255 characters are kept, any other is parsed each time.
  const seenHosts = new Map<string, boolean>();
  const matches = (host: string): boolean => {
    const known = seenHosts.get(host);
    if (known !== undefined) return known;
    const seen = parse(host);
    const allowed =
      seen !== null && parsed.some((e) => e.hostname === seen.hostname && (e.port === '' || e.port === seen.port));
    if (seenHosts.size < HOSTS_KEPT && host.length <= 255) seenHosts.set(host, allowed);
    return allowed;
  };
  const fromProxy = (req: IncomingMessage): boolean => trusted.has(peer(req.socket.remoteAddress));
  const first = (value: string | string[] | undefined): string | undefined => {
    const v = Array.isArray(value) ? value[0] : value;
    return v?.split(',')[0]?.trim() || undefined;
  };
  return {
    allowed: Object.freeze([...new Set(entries)]),
    refuse(req) {
      const forwarded = fromProxy(req) ? first(req.headers['x-forwarded-host']) : undefined;
      const host = forwarded ?? req.headers.host;
      const which = forwarded !== undefined ? 'X-Forwarded-Host' : 'Host';
      if (host === undefined || !matches(host))
        return `the ${which} header ${host === undefined ? 'is missing' : JSON.stringify(host) + ' is not an allowed host'} (allowed: ${[...new Set(entries)].join(', ')})`;
      const origin = req.headers.origin;
      if (origin !== undefined) {
        let originHost: string | null = null;
        try {
          originHost = new URL(origin).host;
        } catch {
          originHost = null;
        }
        if (originHost === null || originHost === '' || !matches(originHost))
          return `the Origin header ${JSON.stringify(origin)} does not name an allowed host (allowed: ${[...new Set(entries)].join(', ')})`;
      }
      return null;
    },
    clientAddress(req) {
      const own = peer(req.socket.remoteAddress);
      if (!trusted.has(own)) return own;
      return first(req.headers['x-forwarded-for']) ?? own;
    },
  };
}
