/**
 * The policy over MCP resources and prompts: the `resources:` and `prompts:` rule lists of a policy file.
 * Ordered, first match wins, the file's `fallback` when none matches, `mode: shadow` recorded and not
 * enforced — the same shape as tool rules, with the upstream's namespace as the namespace selector.
 */
import { canonical } from '../names.js';
import type { PermissionResult } from '../permissions/result.js';
import {
  argumentAt,
  compileCondition,
  compileGlob,
  compileNameGlob,
  isGlob,
  runTests,
  type ConditionTest,
  type Glob,
} from '../policy-file/matchers.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import type { PolicyConditionData, PolicyIssue } from '../policy-file/types.js';

/** What a resource or prompt rule list decided. */
export interface ItemVerdict {
  readonly effect: PermissionResult;
  /** The enforced rule that decided, or null for the fallback (or a refusal before any rule). */
  readonly rule: string | null;
  readonly reason: string;
  /** What the rules would have decided with shadow rules enforced, when that differs. */
  readonly shadow: ShadowVerdict | null;
}

/** What shadow rules would have decided. */
export interface ShadowVerdict {
  readonly effect: PermissionResult;
  readonly rule: string | null;
  readonly reason: string;
}

interface ItemRule {
  readonly name: string;
  readonly result: PermissionResult;
  readonly reason: string | null;
  readonly shadow: boolean;
  readonly namespace: string | null;
  readonly exact: ReadonlySet<string>;
  readonly globs: readonly Glob[];
  /**
   * Resource rules that refuse or ask compare lower-cased: a server may treat `docs://SECRET/keys` as
   * `docs://secret/keys` (an opaque host keeps its case in WHATWG URLs), and a deny must not miss it.
   */
  readonly folded: boolean;
  /** No `uri`/`prompts` selector: every item of the namespace. */
  readonly all: boolean;
  readonly tests: readonly ConditionTest[];
}

/** One kind's rules (resources or prompts). */
export class ItemPolicy {
  readonly kind: 'resource' | 'prompt';
  readonly #rules: readonly ItemRule[];
  readonly #fallback: PermissionResult;
  readonly #shadowFallback: PermissionResult;
  readonly #policyShadow: boolean;

  /** @internal */
  constructor(
    kind: 'resource' | 'prompt',
    rules: readonly ItemRule[],
    fallback: PermissionResult,
    policyShadow: boolean,
  ) {
    this.kind = kind;
    this.#rules = rules;
    this.#shadowFallback = fallback;
    this.#policyShadow = policyShadow;
    this.#fallback = policyShadow ? 'allow' : fallback;
  }

  /**
   * Decides one access: `key` is the resource URI in normal form or the prompt's own name (without the
   * namespace), `args` a prompt's arguments. A rule that cannot judge an argument denies. With `partial`
   * (a completion, which knows only some arguments), a rule whose conditions name an argument not given
   * cannot be judged either, and denies.
   */
  decide(namespace: string, key: string, args: Readonly<Record<string, unknown>> = {}, partial = false): ItemVerdict {
    const enforced = this.#walk(namespace, key, args, false, partial);
    if (!this.#policyShadow && !this.#rules.some((r) => r.shadow)) return { ...enforced, shadow: null };
    const shadow = this.#walk(namespace, key, args, true, partial);
    const differs = shadow.effect !== enforced.effect || shadow.rule !== enforced.rule;
    return { ...enforced, shadow: differs ? shadow : null };
  }

  /**
   * Whether an item may be shown in a list: true unless every way a call to it could go is refused (a
   * rule with conditions may or may not match; only a condition-free deny, or the fallback, hides it).
   */
  visible(namespace: string, key: string): boolean {
    for (const rule of this.#rules) {
      if (rule.shadow || !this.#selects(rule, namespace, key)) continue;
      if (rule.tests.length === 0) return rule.result !== 'deny';
      if (rule.result !== 'deny') return true;
    }
    return this.#fallback !== 'deny';
  }

  /** Whether anything of a namespace could be permitted (resource templates are listed by this). */
  mayPermit(namespace: string): boolean {
    for (const rule of this.#rules) {
      if (rule.shadow || (rule.namespace !== null && rule.namespace !== canonical(namespace))) continue;
      if (rule.result !== 'deny') return true;
      if (rule.all && rule.tests.length === 0) return false;
    }
    return this.#fallback !== 'deny';
  }

  #walk(
    namespace: string,
    key: string,
    args: Readonly<Record<string, unknown>>,
    withShadow: boolean,
    partial: boolean,
  ): Omit<ItemVerdict, 'shadow'> {
    for (const rule of this.#rules) {
      if (rule.shadow && !withShadow) continue;
      if (!withShadow && this.#policyShadow) continue;
      if (!this.#selects(rule, namespace, key)) continue;
      const unknown = partial ? rule.tests.find((t) => !argumentAt(args, t.arg).present) : undefined;
      if (unknown)
        return {
          effect: 'deny',
          rule: rule.name,
          reason: `the rule's conditions need the argument ${JSON.stringify(unknown.arg)}, which is not known yet; the ${this.kind} cannot be judged safely`,
        };
      const verdict = rule.tests.length === 0 ? true : runTests(rule.tests, args);
      if (verdict === false) continue;
      if (verdict !== true)
        return { effect: 'deny', rule: rule.name, reason: `${verdict}; the ${this.kind} cannot be judged safely` };
      return { effect: rule.result, rule: rule.name, reason: rule.reason ?? `${this.kind} rule ${rule.name}` };
    }
    const fallback = withShadow ? this.#shadowFallback : this.#fallback;
    return {
      effect: fallback,
      rule: null,
      reason: `no ${this.kind} rule matched; the policy's fallback is ${fallback}`,
    };
  }

  #selects(rule: ItemRule, namespace: string, key: string): boolean {
    if (rule.namespace !== null && rule.namespace !== canonical(namespace)) return false;
    if (rule.all) return true;
    const form = this.kind === 'prompt' ? canonical(key) : rule.folded ? foldedUri(key) : key;
    return rule.exact.has(form) || rule.globs.some((g) => g.test(form));
  }
}

/** The resource and prompt policies of a policy file, or the issues that refuse it. */
export type GovernanceResult =
  | { readonly ok: true; readonly resources: ItemPolicy; readonly prompts: ItemPolicy; readonly issues?: never }
  | { readonly ok: false; readonly issues: readonly PolicyIssue[] };

/** Compiles the `resources:` and `prompts:` rules of a loaded policy file. */
export function compileGovernance(set: PolicySet): GovernanceResult {
  const issues: PolicyIssue[] = [];
  const issue = (path: (string | number)[], code: string, message: string): void => {
    issues.push({ file: set.file ?? '<input>', ...set.positionOf(path), at: path.join('.'), code, message });
  };
  const fallback = set.data.fallback ?? 'deny';
  const policyShadow = set.data.mode === 'shadow';
  const compileKind = (kind: 'resources' | 'prompts'): ItemRule[] => {
    const out: ItemRule[] = [];
    const names = new Set<string>();
    for (const [index, data] of (set.data[kind] ?? []).entries()) {
      const path = [kind, index];
      if (names.has(data.name))
        issue([...path, 'name'], 'duplicate-rule', `rule name ${JSON.stringify(data.name)} is used twice in ${kind}`);
      names.add(data.name);
      const raw =
        kind === 'resources'
          ? (data as { uri?: string | readonly string[] }).uri
          : (data as { prompts?: string | readonly string[] }).prompts;
      const patterns = raw === undefined ? [] : typeof raw === 'string' ? [raw] : raw;
      const exact = new Set<string>();
      const globs: Glob[] = [];
      const folded = kind === 'resources' && data.result !== 'allow';
      for (const pattern of patterns) {
        try {
          if (kind === 'prompts') {
            const form = canonical(pattern);
            if (isGlob(form)) globs.push(compileNameGlob(form));
            else exact.add(form);
          } else if (isGlob(pattern)) {
            // Spelled as request URIs are (percent-encoded NFC), or a deny on `Gehälter/**` never matches.
            const normal = normalUriGlob(pattern);
            globs.push(compileGlob(folded ? foldedUri(normal) : normal));
          } else {
            const normal = normalResourceUri(pattern);
            if (!normal.ok) throw new Error(normal.problem);
            exact.add(folded ? foldedUri(normal.uri) : normal.uri);
          }
        } catch (error) {
          issue([...path, kind === 'resources' ? 'uri' : 'prompts'], 'invalid-pattern', (error as Error).message);
        }
      }
      const tests: ConditionTest[] = [];
      const when = (data as { when?: Readonly<Record<string, PolicyConditionData>> }).when ?? {};
      for (const [arg, condition] of Object.entries(when)) {
        try {
          tests.push(...compileCondition(arg, condition as Record<string, unknown>));
        } catch (error) {
          issue([...path, 'when', arg], 'invalid-pattern', (error as Error).message);
        }
      }
      out.push({
        name: data.name,
        result: data.result,
        reason: data.reason ?? null,
        shadow: data.mode === 'shadow',
        namespace: data.namespace === undefined ? null : canonical(data.namespace),
        exact,
        globs,
        all: raw === undefined,
        folded,
        tests,
      });
    }
    return out;
  };
  const resources = compileKind('resources');
  const prompts = compileKind('prompts');
  if (issues.length > 0) return { ok: false, issues };
  return {
    ok: true,
    resources: new ItemPolicy('resource', resources, fallback, policyShadow),
    prompts: new ItemPolicy('prompt', prompts, fallback, policyShadow),
  };
}

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
function foldedUri(uri: string): string {
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
function normalUriGlob(pattern: string): string {
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
