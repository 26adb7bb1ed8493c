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
import { foldedUri, normalResourceUri, normalUriGlob } from '../policy-file/uri.js';

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
