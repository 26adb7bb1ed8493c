/**
 * The `resources:` and `prompts:` rules of a policy file compiled into the gate's rule form. A resource
 * read (or subscription, or template completion) is a call of the gate-level tool `resource` whose
 * arguments are `{ namespace, uri, action }`, the URI in normal form (uri.ts); a prompt get (or completion)
 * is a call of the tool `prompt` with `{ namespace, name, action, arguments }`. Each list becomes an
 * ordinary PermissionPolicy over its tool — first match wins, the file's fallback, shadow rules kept out
 * of the enforced policy and in a shadow one — so the gate decides, asks, audits and explains them as it
 * does tool calls: one rule engine.
 *
 * Why a tool of its own per kind, in its own policy, and not more rules in the tool policy: a tool rule
 * without a selector matches every tool, so it would decide resource reads too; the allowlist layers
 * (agents, tenants, scopes) name tools, not URIs; and the two lists may reuse names, which one policy
 * refuses. Kept apart, a resource rule meets resource reads only, in file order.
 */
import type { StandardSchemaV1 } from '../schema.js';
import { canonical } from '../names.js';
import { PermissionPolicy } from '../permissions/policy.js';
import type { PermissionResult } from '../permissions/result.js';
import type { PermissionRule } from '../permissions/rule.js';
import { defineTool, type Tool, type ToolExecution } from '../tool.js';
import {
  argumentAt,
  compileCondition,
  compileGlob,
  compileNameGlob,
  isGlob,
  runTests,
  type ConditionTest,
  type Glob,
} from './matchers.js';
import type { PolicyConditionData, PolicyFileData, PolicyPosition } from './types.js';
import { decisionForms, foldedUri, normalResourceUri, normalUriGlob } from './uri.js';

/** The gate-level tool a resource read is a call of. */
const RESOURCE_TOOL = 'resource';
/** The gate-level tool a prompt get is a call of. */
const PROMPT_TOOL = 'prompt';

/** Which list: `resources:` or `prompts:`. */
export type ItemKind = 'resource' | 'prompt';

/** What is done with a resource or prompt (every action is decided by the same rules). */
export type ItemAction = 'read' | 'subscribe' | 'get' | 'complete';

/** A resource or prompt rule as the file states it, compiled. */
export interface ItemRuleInfo {
  readonly kind: ItemKind;
  readonly name: string;
  readonly index: number;
  readonly result: PermissionResult;
  readonly reason: string | null;
  readonly shadow: boolean;
  /** The namespace selector, in canonical form. */
  readonly namespace: string | null;
  /** No `uri` / `prompts` selector: every item of the namespace. */
  readonly all: boolean;
  /** A prompt rule's `when:` tests (on `arguments.<name>`); none for resources. */
  readonly tests: readonly ConditionTest[];
  /** Whether the rule selects the item `key` (a URI in normal form, or a prompt's own name) of `namespace`. */
  readonly selects: (namespace: string, key: string) => boolean;
  readonly position: PolicyPosition;
}

/** One list of item rules in the gate's rule form. */
export interface ItemRules {
  readonly kind: ItemKind;
  /** The gate-level tool its calls name. */
  readonly tool: string;
  /** The enforced policy (shadow rules left out; a shadow policy enforces none and falls back to allow). */
  readonly policy: PermissionPolicy;
  /** The policy with its shadow rules enforced, or null when none is in shadow mode. */
  readonly shadow: PermissionPolicy | null;
  readonly rules: readonly ItemRuleInfo[];
  /**
   * Whether an item may be shown in a list: true unless every way a call to it could go is refused (a rule
   * with conditions may or may not match; only a condition-free deny, or the fallback, hides it).
   */
  visible(namespace: string, key: string): boolean;
  /** Whether anything of a namespace could be permitted (resource templates are listed by this). */
  mayPermit(namespace: string): boolean;
}

/** Where a compile problem is, and what it is. */
export type ItemIssue = (path: readonly (string | number)[], code: string, message: string) => void;

/**
 * Compiles the `resources:` and `prompts:` lists of a schema-valid file, reporting each problem (a pattern
 * that does not compile, a duplicate name) through `issue`.
 */
export function compileItemRules(
  data: PolicyFileData,
  version: string,
  positionOf: (path: readonly (string | number)[]) => PolicyPosition,
  issue: ItemIssue,
): { readonly resources: ItemRules; readonly prompts: ItemRules } {
  return {
    resources: compileKind('resource', data, version, positionOf, issue),
    prompts: compileKind('prompt', data, version, positionOf, issue),
  };
}

function compileKind(
  kind: ItemKind,
  data: PolicyFileData,
  version: string,
  positionOf: (path: readonly (string | number)[]) => PolicyPosition,
  issue: ItemIssue,
): ItemRules {
  const list = kind === 'resource' ? 'resources' : 'prompts';
  const infos: ItemRuleInfo[] = [];
  const rules: PermissionRule[] = [];
  const names = new Set<string>();
  for (const [index, rule] of (data[list] ?? []).entries()) {
    const path = [list, index];
    if (names.has(rule.name)) {
      issue([...path, 'name'], 'duplicate-rule', `rule name ${JSON.stringify(rule.name)} is used twice in ${list}`);
      continue;
    }
    names.add(rule.name);
    const raw =
      kind === 'resource'
        ? (rule as { uri?: string | readonly string[] }).uri
        : (rule as { prompts?: string | readonly string[] }).prompts;
    const patterns = raw === undefined ? [] : typeof raw === 'string' ? [raw] : raw;
    // Rules that refuse or ask compare lower-cased: a server may treat `docs://SECRET/keys` as
    // `docs://secret/keys` (an opaque host or path keeps its case), and a deny must not miss it.
    const refusing = kind === 'resource' && rule.result !== 'allow';
    const exact = new Set<string>();
    const globs: Glob[] = [];
    for (const pattern of patterns) {
      try {
        if (kind === 'prompt') {
          const form = canonical(pattern);
          if (isGlob(form)) globs.push(compileNameGlob(form));
          else exact.add(form);
        } else if (isGlob(pattern)) {
          // Spelled as request URIs are (percent-encoded NFC), or a deny on `Gehälter/**` never matches.
          const normal = normalUriGlob(pattern);
          globs.push(compileGlob(refusing ? foldedUri(normal) : normal));
        } else {
          const normal = normalResourceUri(pattern);
          if (!normal.ok) throw new Error(normal.problem);
          const form = decisionForms(normal.uri).full;
          exact.add(refusing ? foldedUri(form) : form);
        }
      } catch (error) {
        issue([...path, kind === 'resource' ? 'uri' : 'prompts'], 'invalid-pattern', (error as Error).message);
      }
    }
    const tests: ConditionTest[] = [];
    const when = (rule as { when?: Readonly<Record<string, PolicyConditionData>> }).when ?? {};
    for (const [arg, condition] of Object.entries(when)) {
      try {
        tests.push(...compileCondition(`arguments.${arg}`, condition as Record<string, unknown>));
      } catch (error) {
        issue([...path, 'when', arg], 'invalid-pattern', (error as Error).message);
      }
    }
    const namespace = rule.namespace === undefined ? null : canonical(rule.namespace);
    const all = raw === undefined;
    const matches = (key: string): boolean =>
      exact.has(key) || globs.some((g) => g.test(key) || g.isFolderOf?.(key) === true);
    const selectsKey =
      kind === 'prompt'
        ? (key: string): boolean => matches(canonical(key))
        : (uri: string): boolean => {
            // A deny or an ask meets the URI with and without its query and fragment; an allow only as a whole.
            const forms = decisionForms(uri);
            if (!refusing) return matches(forms.full);
            return matches(foldedUri(forms.full)) || matches(foldedUri(forms.path));
          };
    const selects = (ns: string, key: string): boolean =>
      (namespace === null || namespace === canonical(ns)) && (all || selectsKey(key));
    const info: ItemRuleInfo = Object.freeze({
      kind,
      name: rule.name,
      index,
      result: rule.result,
      reason: rule.reason ?? null,
      shadow: rule.mode === 'shadow',
      namespace,
      all,
      tests: Object.freeze(tests),
      selects,
      get position(): PolicyPosition {
        return positionOf(path);
      },
    });
    infos.push(info);
    rules.push(itemRule(kind, info));
  }
  return itemRules(kind, infos, rules, data, version);
}

/** The core rule of an item rule: selected by its tool, matched on the call's namespace and URI or name. */
function itemRule(kind: ItemKind, info: ItemRuleInfo): PermissionRule {
  const tool = kind === 'resource' ? RESOURCE_TOOL : PROMPT_TOOL;
  return {
    name: info.name,
    result: info.result,
    ...(info.reason !== null ? { reason: info.reason } : {}),
    tools: [tool],
    match: (_tool, params) => {
      const namespace = params['namespace'];
      const key = kind === 'resource' ? params['uri'] : params['name'];
      if (typeof namespace !== 'string' || typeof key !== 'string')
        throw new Error(`the ${kind} call names no namespace or ${kind === 'resource' ? 'URI' : 'prompt'}`);
      if (!info.selects(namespace, key)) return false;
      if (info.tests.length === 0) return true;
      // A completion knows only some arguments: a rule whose conditions need another cannot be judged.
      if (params['action'] === 'complete') {
        const unknown = info.tests.find((t) => !argumentAt(params, t.arg).present);
        if (unknown)
          throw new Error(
            `the rule's conditions need the argument ${JSON.stringify(unknown.arg.slice('arguments.'.length))}, which is not known yet; the ${kind} cannot be judged safely`,
          );
      }
      const verdict = runTests(info.tests, params);
      if (typeof verdict === 'string') throw new Error(`${verdict}; the ${kind} cannot be judged safely`);
      return verdict;
    },
  };
}

function itemRules(
  kind: ItemKind,
  infos: readonly ItemRuleInfo[],
  rules: readonly PermissionRule[],
  data: PolicyFileData,
  version: string,
): ItemRules {
  const policyShadow = data.mode === 'shadow';
  const fallback = data.fallback ?? 'deny';
  const enforcedInfos = policyShadow ? [] : infos.filter((r) => !r.shadow);
  const enforcedRules = policyShadow ? [] : rules.filter((_, i) => !infos[i]!.shadow);
  const enforcedFallback: PermissionResult = policyShadow ? 'allow' : fallback;
  const policy = new PermissionPolicy({ rules: enforcedRules, fallback: enforcedFallback, version });
  const shadow =
    policyShadow || enforcedRules.length !== rules.length
      ? new PermissionPolicy({ rules: [...rules], fallback, version })
      : null;
  return Object.freeze({
    kind,
    tool: kind === 'resource' ? RESOURCE_TOOL : PROMPT_TOOL,
    policy,
    shadow,
    rules: Object.freeze([...infos]),
    visible(namespace: string, key: string): boolean {
      for (const rule of enforcedInfos) {
        if (!rule.selects(namespace, key)) continue;
        if (rule.tests.length === 0) return rule.result !== 'deny';
        if (rule.result !== 'deny') return true;
      }
      return enforcedFallback !== 'deny';
    },
    mayPermit(namespace: string): boolean {
      for (const rule of enforcedInfos) {
        if (rule.namespace !== null && rule.namespace !== canonical(namespace)) continue;
        if (rule.result !== 'deny') return true;
        if (rule.all && rule.tests.length === 0) return false;
      }
      return enforcedFallback !== 'deny';
    },
  });
}

/** What the gate-level tools validate: the shape of their arguments, and a URI already in normal form. */
function itemSchema(kind: ItemKind): StandardSchemaV1<unknown, Record<string, unknown>> {
  const actions = kind === 'resource' ? ['read', 'subscribe', 'complete'] : ['get', 'complete'];
  return {
    '~standard': {
      version: 1,
      vendor: 'toolgate',
      validate(value: unknown) {
        const fail = (message: string) => ({ issues: [{ message }] });
        if (typeof value !== 'object' || value === null || Array.isArray(value))
          return fail(`a ${kind} call takes an object`);
        const args = value as Record<string, unknown>;
        const allowed =
          kind === 'resource' ? ['namespace', 'uri', 'action'] : ['namespace', 'name', 'action', 'arguments'];
        const extra = Object.keys(args).find((k) => !allowed.includes(k));
        if (extra !== undefined) return fail(`a ${kind} call takes no ${JSON.stringify(extra)}`);
        if (typeof args['namespace'] !== 'string' || args['namespace'] === '')
          return fail(`a ${kind} call names its upstream's namespace`);
        if (!actions.includes(args['action'] as string))
          return fail(`a ${kind} call's action is one of ${actions.join(', ')}`);
        if (kind === 'resource') {
          const normal = normalResourceUri(args['uri']);
          if (!normal.ok) return fail(normal.problem);
          if (normal.uri !== args['uri'])
            return fail(
              `the resource URI ${JSON.stringify(args['uri'])} is not in normal form (${JSON.stringify(normal.uri)})`,
            );
        } else {
          if (typeof args['name'] !== 'string' || args['name'] === '') return fail('a prompt call names its prompt');
          const given = args['arguments'];
          if (typeof given !== 'object' || given === null || Array.isArray(given))
            return fail("a prompt call's arguments are an object");
        }
        return { value: args };
      },
    },
  };
}

/**
 * The gate-level tool of `kind`, running `execute` (the gateway forwards the call upstream; `toolgate
 * explain`'s stub throws). Tagged `read_only` for neither: a rule selecting by tag does not reach it.
 */
export function itemTool(
  kind: ItemKind,
  execute: (args: Record<string, unknown>, execution: ToolExecution) => unknown,
): Tool {
  return defineTool({
    name: kind === 'resource' ? RESOURCE_TOOL : PROMPT_TOOL,
    description:
      kind === 'resource'
        ? 'Read, subscribe to or complete an MCP resource behind the gateway'
        : 'Get or complete an MCP prompt behind the gateway',
    parameters: itemSchema(kind),
    execute,
  });
}
