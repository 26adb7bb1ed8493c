/**
 * THE normal form of resource URIs: what the rules of a policy file's `resources:` section are matched
 * against and what the gateway sends upstream. One place, used by the policy file (patterns) and the
 * gateway (requests, listings, subscriptions, completions).
 *
 * RFC 3986 §6.2.2 (syntax-based normalisation) with the WHATWG URL parser of Node doing the parsing: it is
 * the parser the TypeScript MCP SDK's servers match resource URIs with (`new URL(uri)`), so deciding on its
 * form is deciding on what the most common upstreams see; it lower-cases the scheme (and a special scheme's
 * host), resolves `.` and `..` (§6.2.2.3), percent-encodes what must be encoded and drops default ports
 * (§6.2.3). Around it: escapes of unreserved characters are decoded and the others upper-cased (§6.2.2.1,
 * §6.2.2.2) before parsing; empty path segments are collapsed before the dot segments are resolved (as a
 * file system reads `a//b`: the upstream collapses them, so the rules must see them collapsed — and the
 * collapsed URI is what the upstream is sent); a registered name's host is lower-cased (§6.2.2.1: WHATWG
 * keeps the case of a non-special scheme's host); non-ASCII text is NFC. What cannot be brought to one
 * normal form safely is refused.
 */
// Escapes an upstream may decode after the policy looked at the text: an encoded slash, backslash, dot
// or NUL would let `file:///public/..%2Fsecret` pass a rule on `file:///public/**`.
const RISKY_ESCAPE = /%(2[fFeE]|5[cC]|00)/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f\\]/;
// RFC 3986 Appendix B: the URI reference's five components (scheme, authority, path, query, fragment).
const COMPONENTS = /^(?:([^:/?#]+):)?(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/s;
// The schemes whose host WHATWG treats as a domain (and lower-cases itself).
const SPECIAL = new Set(['http:', 'https:', 'ws:', 'wss:', 'ftp:', 'file:']);

/** The outcome of bringing a resource URI to normal form. */
export type NormalUri =
  | { readonly ok: true; readonly uri: string; readonly problem?: never }
  | { readonly ok: false; readonly problem: string; readonly uri?: never };

/**
 * A resource URI in normal form (see the file's comment), which is what rules are matched against and
 * what the upstream is sent; a URI that cannot be judged safely is refused with what is wrong: not
 * absolute, control characters, backslashes, encoded separators or dots, escapes that are not UTF-8,
 * user information (`docs://eve@kb/…` may reach `kb` past a rule on `docs://kb/…`), dot segments in a
 * path without an authority (`docs:kb/../secret`: WHATWG leaves such a path as it is), or a form that
 * does not stay the same when normalised again.
 *
 * @example
 * normalResourceUri('file:///srv//data/../secrets/key') // { ok: true, uri: 'file:///srv/secrets/key' }
 */
export function normalResourceUri(uri: unknown): NormalUri {
  // A pure function of the text: a URI seen lately is answered from memory (the gateway reads the same few
  // URIs again and again, and each normalisation is two WHATWG parses), a fresh object each time.
  const known = typeof uri === 'string' ? recent.get(uri) : undefined;
  if (known !== undefined) return known.ok ? { ok: true, uri: known.uri } : { ok: false, problem: known.problem };
  const normal = normalTwice(uri);
  if (typeof uri === 'string' && uri.length <= RECENT_LENGTH) {
    // Oldest first out: at most RECENT_SIZE short URIs held.
    if (recent.size >= RECENT_SIZE) recent.delete(recent.keys().next().value as string);
    recent.set(uri, normal.ok ? { ok: true, uri: normal.uri } : { ok: false, problem: normal.problem });
  }
  return normal;
}

/** How many recent URIs {@link normalResourceUri} remembers, and how long one may be (at most ~0.5 MB held). */
const RECENT_SIZE = 1024;
const RECENT_LENGTH = 512;
const recent = new Map<string, NormalUri>();

function normalTwice(uri: unknown): NormalUri {
  const first = normalOnce(uri);
  if (!first.ok) return first;
  // One normal form: normalising it again must give it back, or which one an upstream reads is open.
  const again = normalOnce(first.uri);
  if (!again.ok || again.uri !== first.uri)
    return { ok: false, problem: `the resource URI ${JSON.stringify(uri)} cannot be brought to one normal form` };
  return first;
}

function normalOnce(uri: unknown): NormalUri {
  if (typeof uri !== 'string' || uri === '')
    return { ok: false, problem: 'the resource URI must be a non-empty string' };
  if (uri.length > 4096) return { ok: false, problem: 'the resource URI is longer than 4096 characters' };
  if (CONTROL.test(uri)) return { ok: false, problem: 'the resource URI holds a control character or a backslash' };
  if (RISKY_ESCAPE.test(uri))
    return { ok: false, problem: 'the resource URI holds an encoded slash, backslash, dot or NUL' };
  const notAbsolute: NormalUri = {
    ok: false,
    problem: `the resource URI ${JSON.stringify(uri)} is not an absolute URI`,
  };
  // RFC 3986 §6.2.2.2: escapes of unreserved characters are decoded (`%73ecret` is `secret`), so a rule
  // on the plain spelling also meets the encoded one.
  const parts = COMPONENTS.exec(unreservedDecoded(uri));
  if (!parts || parts[1] === undefined) return notAbsolute;
  const [, scheme, authority, rawPath = '', query, fragment] = parts;
  const path = rawPath.replace(/\/{2,}/g, '/');
  if (authority === undefined && path.split('/').some((s) => s === '.' || s === '..'))
    return {
      ok: false,
      problem: `the resource URI ${JSON.stringify(uri)} has a "." or ".." segment in a path without an authority, which is not resolved the same way everywhere`,
    };
  const rebuilt = `${scheme}:${authority === undefined ? '' : `//${authority}`}${path}${query === undefined ? '' : `?${query}`}${fragment === undefined ? '' : `#${fragment}`}`;
  const url = URL.parse(rebuilt);
  if (!url) return notAbsolute;
  if (url.username !== '' || url.password !== '')
    return {
      ok: false,
      problem: `the resource URI ${JSON.stringify(uri)} holds user information (before "@"), which an upstream may drop`,
    };
  // Aliases a server may read as another name: a host's trailing dot (`kb.` is `kb`) is dropped; a port
  // of a scheme with no known default (`docs://kb:80/…`: a server may ignore it) is refused.
  if (url.hostname.endsWith('.') && url.hostname.length > 1) {
    const host = url.hostname.replace(/\.+$/, '');
    if (host === '' || host.endsWith('.'))
      return { ok: false, problem: `the resource URI ${JSON.stringify(uri)} has a host that cannot be normalised` };
    url.hostname = host;
    if (url.hostname !== host)
      return { ok: false, problem: `the resource URI ${JSON.stringify(uri)} has a host that cannot be normalised` };
  }
  if (!SPECIAL.has(url.protocol) && url.port !== '')
    return {
      ok: false,
      problem: `the resource URI ${JSON.stringify(uri)} names a port for a scheme with no known default port, which a server may read with or without it`,
    };
  // Segments a server may read as another: one ending in "." or a space (Windows drops them: `secrets.`
  // is `secrets`), and a dot segment with parameters (`..;`, which Java servers resolve as `..`).
  for (const segment of url.pathname.split('/')) {
    if (/(?:\.|%20)$/.test(segment))
      return {
        ok: false,
        problem: `the resource URI ${JSON.stringify(uri)} has a path segment ending in "." or a space, which a server may read without it`,
      };
    if (/^(?:\.|%2E)*;/i.test(segment) && segment.startsWith('.'))
      return {
        ok: false,
        problem: `the resource URI ${JSON.stringify(uri)} has a dot segment with parameters (like "..;"), which a server may resolve as ".."`,
      };
  }
  if (!SPECIAL.has(url.protocol) && /[A-Z]/.test(url.hostname)) {
    // §6.2.2.1: a registered name is case-insensitive (escapes keep their upper-case hex).
    const host = url.host.replace(/%[0-9A-F]{2}|[A-Z]+/g, (m) => (m.startsWith('%') ? m : m.toLowerCase()));
    url.host = host;
    if (url.host !== host)
      return { ok: false, problem: `the resource URI ${JSON.stringify(uri)} has a host that cannot be lower-cased` };
  }
  // Unicode NFC, as for tool path conditions: `Gehälter` and `Geha\u0308lter` (NFD, as macOS spells file
  // names) are one name to a file server, so they must be one URI to the rules.
  const composed = composedUri(url.href);
  if (composed === null)
    return { ok: false, problem: `the resource URI ${JSON.stringify(uri)} holds percent-escapes that are not UTF-8` };
  const href = composed === url.href ? url.href : (URL.parse(composed)?.href ?? '\u0000');
  if (CONTROL.test(href) || RISKY_ESCAPE.test(href) || /^[^?#]*[^:/?#]\/\//.test(href))
    return { ok: false, problem: `the resource URI ${JSON.stringify(uri)} cannot be brought to normal form` };
  return { ok: true, uri: href };
}

/**
 * The forms a URI in normal form is decided under: `full`, with its query and fragment, and `path`,
 * without them; in both a trailing slash is dropped, so `docs://kb/dir/` is decided as the folder
 * `docs://kb/dir`. Rules that refuse or ask are matched against both (a deny on `docs://kb/key` refuses
 * `docs://kb/key?v=2` and `docs://kb/key#x`); rules that allow against `full` only, so the query and the
 * fragment are part of what an allow permits.
 */
export function decisionForms(uri: string): { readonly full: string; readonly path: string } {
  const cut = uri.search(/[?#]/);
  const path = cut < 0 ? uri : uri.slice(0, cut);
  const rest = cut < 0 ? '' : uri.slice(cut);
  const folder = path.length > 1 && path.endsWith('/') ? path.replace(/\/+$/, '') : path;
  return { full: folder + rest, path: folder };
}

/** `text` with escapes of unreserved characters decoded and the others upper-cased (RFC 3986 §6.2.2). */
function unreservedDecoded(text: string): string {
  return text.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
    const ch = String.fromCharCode(parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(ch) ? ch : escape.toUpperCase();
  });
}

// Runs of percent-escapes of non-ASCII bytes: UTF-8 sequences in a URI in normal form.
const HIGH_ESCAPES = /(?:%[89A-Fa-f][0-9A-Fa-f])+/g;
const NON_ASCII = /[\u0080-\u{10FFFF}]+/gu;

/**
 * `text` with its UTF-8 escapes decoded, NFC-normalised (and lower-cased when `fold`), and its non-ASCII
 * characters encoded again (upper-case hex); null when an escape run is not UTF-8.
 */
function composedUri(text: string, fold = false): string | null {
  try {
    let form = text.replace(HIGH_ESCAPES, (run) => decodeURIComponent(run)).normalize('NFC');
    if (fold) form = form.toLowerCase().normalize('NFC');
    return form
      .replace(NON_ASCII, (run) => encodeURIComponent(run))
      .replace(/%[0-9a-f]{2}/gi, (escape) => escape.toUpperCase());
  } catch {
    return null; // not UTF-8, or a lone surrogate
  }
}

/** A URI in normal form lower-cased, non-ASCII letters included, for rules that refuse or ask. */
export function foldedUri(uri: string): string {
  return composedUri(uri, true) ?? uri.toLowerCase();
}

// Characters a URL's path holds percent-encoded (WHATWG path percent-encode set, beyond controls).
const PATH_ENCODED = /[ "<>`{}\u0080-\u{10FFFF}]/u;

/**
 * A resource glob spelled as request URIs are after {@link normalResourceUri}: escapes of unreserved
 * characters decoded and others upper-cased, NFC, the literal characters a URL percent-encodes encoded
 * the same way, the scheme and the host lower-cased, empty path segments collapsed, a trailing slash
 * dropped (as {@link decisionForms} drops it); `*`, `**`, `?`, classes and braces stay glob syntax. Throws
 * for what no URI in normal form holds.
 */
export function normalUriGlob(pattern: string): string {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(pattern)) throw new Error('the URI pattern holds a control character');
  if (RISKY_ESCAPE.test(pattern))
    throw new Error('the URI pattern holds an encoded slash, backslash, dot or NUL, which no URI in normal form holds');
  const unescaped = unreservedDecoded(pattern);
  let text: string;
  try {
    text = unescaped.replace(HIGH_ESCAPES, (run) => decodeURIComponent(run)).normalize('NFC');
  } catch {
    throw new Error('the URI pattern holds percent-escapes that are not UTF-8');
  }
  let out = '';
  let inClass = false;
  const chars = [...text];
  for (let i = 0; i < chars.length; i++) {
    let ch = chars[i]!;
    const escaped = ch === '\\' && i + 1 < chars.length;
    if (escaped) ch = chars[++i]!;
    if (PATH_ENCODED.test(ch) && (escaped || (ch !== '{' && ch !== '}'))) {
      if (inClass)
        throw new Error(`the URI pattern holds ${JSON.stringify(ch)} in a [class], which a URI holds percent-encoded`);
      out += encodeURIComponent(ch);
      continue;
    }
    if (!escaped && ch === '[') inClass = true;
    else if (!escaped && ch === ']') inClass = false;
    out += escaped ? `\\${ch}` : ch;
  }
  const parts = /^([A-Za-z][A-Za-z0-9+.-]*:)(\/\/[^/]*)?(.*)$/s.exec(out);
  if (!parts) return out;
  const [, scheme = '', authority = '', rest = ''] = parts;
  const host = authority
    .replace(/%[0-9A-F]{2}|[A-Z]+/g, (m) => (m.startsWith('%') ? m : m.toLowerCase()))
    .replace(/([^/.])\.+(?=(?::\d*)?$)/, '$1'); // a host's trailing dot, as request URIs drop it
  const path = rest.replace(/\/{2,}/g, '/');
  const folder = path.length > 1 && path.endsWith('/') && !path.endsWith('\\/') ? path.replace(/\/+$/, '') : path;
  return `${scheme.toLowerCase()}${host}${folder}`;
}
