/**
 * THE normal form of resource URIs: what the rules of a policy file's `resources:` section are matched
 * against and what the gateway sends upstream. One place, used by the policy file (patterns) and the
 * gateway (requests, listings, subscriptions).
 */
// Escapes an upstream may decode after the policy looked at the text: an encoded slash, backslash, dot
// or NUL would let `file:///public/..%2Fsecret` pass a rule on `file:///public/**`.
const RISKY_ESCAPE = /%(2[fFeE]|5[cC]|00)/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f\\]/;

/** The outcome of bringing a resource URI to normal form. */
export type NormalUri =
  | { readonly ok: true; readonly uri: string; readonly problem?: never }
  | { readonly ok: false; readonly problem: string; readonly uri?: never };

/**
 * A resource URI in WHATWG normal form (`.`/`..` resolved, scheme and host lower-cased), which is what
 * rules are matched against and what the upstream is sent; a URI that cannot be judged safely (not
 * absolute, control characters, backslashes, encoded separators or dots) is refused.
 */
export function normalResourceUri(uri: unknown): NormalUri {
  if (typeof uri !== 'string' || uri === '')
    return { ok: false, problem: 'the resource URI must be a non-empty string' };
  if (uri.length > 4096) return { ok: false, problem: 'the resource URI is longer than 4096 characters' };
  if (CONTROL.test(uri)) return { ok: false, problem: 'the resource URI holds a control character or a backslash' };
  if (RISKY_ESCAPE.test(uri))
    return { ok: false, problem: 'the resource URI holds an encoded slash, backslash, dot or NUL' };
  let url: URL;
  try {
    // RFC 3986 §6.2.2.2: escapes of unreserved characters are decoded (`%73ecret` is `secret`), so a rule
    // on the plain spelling also meets the encoded one.
    url = new URL(unreservedDecoded(uri));
  } catch {
    return { ok: false, problem: `the resource URI ${JSON.stringify(uri)} is not an absolute URI` };
  }
  // Unicode NFC, as for tool path conditions: `Gehälter` and `Geha\u0308lter` (NFD, as macOS spells file
  // names) are one name to a file server, so they must be one URI to the rules.
  const composed = composedUri(url.href);
  if (composed === null)
    return { ok: false, problem: `the resource URI ${JSON.stringify(uri)} holds percent-escapes that are not UTF-8` };
  if (composed === url.href) return { ok: true, uri: url.href };
  const href = URL.parse(composed)?.href ?? '\u0000';
  if (CONTROL.test(href) || RISKY_ESCAPE.test(href))
    return { ok: false, problem: `the resource URI ${JSON.stringify(uri)} cannot be brought to normal form` };
  return { ok: true, uri: href };
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
 * the same way, the scheme lower-cased; `*`, `**`, `?`, classes and braces stay glob syntax. Throws for
 * what no URI in normal form holds.
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
  return out.replace(/^[A-Za-z][A-Za-z0-9+.-]*:/, (scheme) => scheme.toLowerCase());
}
