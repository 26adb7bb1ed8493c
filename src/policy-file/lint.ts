/**
 * `toolgate lint`: what a policy file says that is probably not what its author meant. A file that does
 * not load is reported through its load issues (all errors); a file that loads is checked for rules
 * shadowed by an earlier rule, rules that can never match, one tool spelled two ways, confusable names,
 * unknown tags, references to undeclared tools or agents, and tenants granting tools no agent declares.
 */
import { canonical } from '../names.js';
import { ToolTag } from '../tool.js';
import { confusableFindings } from './confusable.js';
import { readPolicyFile, parsePolicy } from './load.js';
import { jsonEqual, type ConditionTest } from './matchers.js';
import type { PolicyRuleInfo, PolicySet } from './policy-set.js';
import { covers } from './shadowing.js';
import type { PolicyIssue } from './types.js';

/** The lint codes, each with its severity. */
export const LINT_CODES = {
  'shadowed-rule': 'error (warning when both rules give the same result)',
  'never-matches': 'error (warning when it only matches no tool the file declares)',
  'canonical-collision': 'error in one list (load issue), warning across sections',
  'confusable-name': 'warning',
  'unknown-tag': 'error',
  'undeclared-tool': 'error',
  'undeclared-agent': 'error',
  'tenant-grants-undeclared': 'warning',
  'limit-undeclared-tool': 'warning',
} as const;

/** One lint finding. Load issues are findings too, with severity error and their own codes. */
export interface LintFinding extends PolicyIssue {
  readonly severity: 'error' | 'warning';
}

/** The findings for a file, and whether it loaded. */
export interface LintReport {
  readonly file: string;
  readonly loaded: boolean;
  readonly findings: readonly LintFinding[];
  readonly errors: number;
  readonly warnings: number;
}

/** Lints a policy file on disk. */
export async function lintPolicyFile(file: string): Promise<LintReport> {
  return report(file, await readPolicyFile(file));
}

/** Lints policy text. */
export function lintPolicyText(text: string, file = '<input>'): LintReport {
  return report(file, parsePolicy(text, { file }));
}

function report(file: string, result: ReturnType<typeof parsePolicy>): LintReport {
  const findings: LintFinding[] = result.ok
    ? lintPolicy(result.policy)
    : result.issues.map((i) => ({ ...i, severity: 'error' as const }));
  const errors = findings.filter((f) => f.severity === 'error').length;
  return { file, loaded: result.ok, findings, errors, warnings: findings.length - errors };
}

type Path = (string | number)[];

/** Lints a loaded policy. Findings come sorted by position. */
export function lintPolicy(set: PolicySet): LintFinding[] {
  const findings: LintFinding[] = [];
  const file = set.file ?? '<input>';
  const add = (
    severity: LintFinding['severity'],
    code: keyof typeof LINT_CODES,
    path: Path,
    message: string,
    key = false,
  ): void => {
    findings.push({ file, ...set.positionOf(path, key), at: path.join('.'), code, severity, message });
  };
  const data = set.data;
  // The declared universe: tools with metadata, and every tool an agent declares.
  const declared = new Map<string, { spelling: string; path: Path }>();
  const spellings: { name: string; path: Path; key: boolean }[] = [];
  for (const name of Object.keys(data.tools ?? {})) {
    declared.set(canonical(name), { spelling: name, path: ['tools', name] });
    spellings.push({ name, path: ['tools', name], key: true });
  }
  for (const [agent, spec] of Object.entries(data.agents ?? {})) {
    spec.tools.forEach((name, i) => {
      const form = canonical(name);
      if (!declared.has(form)) declared.set(form, { spelling: name, path: ['agents', agent, 'tools', i] });
      spellings.push({ name, path: ['agents', agent, 'tools', i], key: false });
    });
  }
  const universeKnown = data.tools !== undefined || data.agents !== undefined;
  const agentDeclares = new Set(Object.values(data.agents ?? {}).flatMap((a) => a.tools.map(canonical)));

  // One tool spelled two ways across sections (within one list it is a load error).
  for (const s of spellings) {
    const first = declared.get(canonical(s.name));
    if (first && first.spelling !== s.name) {
      add(
        'warning',
        'canonical-collision',
        s.path,
        `${JSON.stringify(s.name)} and ${JSON.stringify(first.spelling)} (at ${first.path.join('.')}) are one tool (canonical form ${JSON.stringify(canonical(s.name))}); spell it one way`,
        s.key,
      );
    }
  }

  // Confusable names, over every name the file mentions.
  // Each at the name itself: a key of the tools section is pointed at as a key, not at its value.
  const mentioned = new Map<string, { path: Path; key: boolean }>();
  for (const s of spellings) if (!mentioned.has(s.name)) mentioned.set(s.name, { path: s.path, key: s.key });
  for (const [tenant, spec] of Object.entries(data.tenants ?? {}))
    spec.tools?.forEach(
      (n, i) => mentioned.has(n) || mentioned.set(n, { path: ['tenants', tenant, 'tools', i], key: false }),
    );
  for (const [scope, names] of Object.entries(data.scopes ?? {}))
    names.forEach((n, i) => mentioned.has(n) || mentioned.set(n, { path: ['scopes', scope, i], key: false }));
  for (const f of confusableFindings(mentioned.keys())) {
    const { path, key } = mentioned.get(f.name) ?? { path: [], key: false };
    if (f.kind === 'mixed-script')
      add(
        'warning',
        'confusable-name',
        path,
        `tool name ${JSON.stringify(f.name)} mixes scripts (${f.scripts.join(', ')}); it may be taken for another name`,
        key,
      );
    else
      add(
        'warning',
        'confusable-name',
        path,
        `tool name ${JSON.stringify(f.name)} looks like ${JSON.stringify(f.other)} but is a different tool`,
        key,
      );
  }

  // References to undeclared tools.
  if (universeKnown) {
    const check = (name: string, path: Path, where: string): void => {
      if (!declared.has(canonical(name)))
        add(
          'error',
          'undeclared-tool',
          path,
          `${where} names ${JSON.stringify(name)}, which no agent declares and the tools section does not describe`,
        );
    };
    for (const [tenant, spec] of Object.entries(data.tenants ?? {}))
      spec.tools?.forEach((n, i) => check(n, ['tenants', tenant, 'tools', i], `tenant ${JSON.stringify(tenant)}`));
    for (const [scope, names] of Object.entries(data.scopes ?? {}))
      names.forEach((n, i) => check(n, ['scopes', scope, i], `scope ${JSON.stringify(scope)}`));
    for (const rule of set.rules) {
      const patterns =
        rule.data.tools === undefined ? [] : typeof rule.data.tools === 'string' ? [rule.data.tools] : rule.data.tools;
      patterns.forEach((p, i) => {
        if (rule.exact.includes(canonical(p)))
          check(
            p,
            typeof rule.data.tools === 'string' ? ['rules', rule.index, 'tools'] : ['rules', rule.index, 'tools', i],
            `rule ${JSON.stringify(rule.name)}`,
          );
      });
    }
  }

  // Tenants granting tools that no agent declares: an entitlement nothing can use.
  if (data.agents !== undefined) {
    for (const [tenant, spec] of Object.entries(data.tenants ?? {})) {
      spec.tools?.forEach((n, i) => {
        if (declared.has(canonical(n)) && !agentDeclares.has(canonical(n))) {
          add(
            'warning',
            'tenant-grants-undeclared',
            ['tenants', tenant, 'tools', i],
            `tenant ${JSON.stringify(tenant)} grants ${JSON.stringify(n)}, which no agent declares`,
          );
        }
      });
    }
  }

  // A limit naming a tool no rule or declaration names (a misspelling, or `rec:refund` of an upstream
  // shown unprefixed): it would count nothing. Globs and tags are left alone (what they select is not known).
  const ruleNames = new Set(set.rules.flatMap((r) => r.exact));
  const unprefixed = new Set(
    Object.entries(data.gateway?.upstreams ?? {}).flatMap(([n, u]) => (u.prefix === false ? [canonical(n)] : [])),
  );
  (data.limits ?? []).forEach((limit, index) => {
    const named: [string, Path, boolean][] = [
      ...(limit.tools ?? []).map((t, i): [string, Path, boolean] => [t, ['limits', index, 'tools', i], false]),
      ...Object.keys(limit.costs ?? {}).map((t): [string, Path, boolean] => [t, ['limits', index, 'costs', t], true]),
    ];
    for (const [name, path, key] of named) {
      if (/[*?[\]{}\\]/.test(name)) continue;
      let form: string;
      try {
        form = canonical(name);
      } catch {
        continue;
      }
      const at = form.indexOf(':');
      if (at > 0 && unprefixed.has(form.slice(0, at)))
        add(
          'warning',
          'limit-undeclared-tool',
          path,
          `limit ${JSON.stringify(limit.name)} names ${JSON.stringify(name)}, but the upstream ${JSON.stringify(form.slice(0, at))} shows its tools unprefixed (prefix: false): write ${JSON.stringify(name.slice(name.indexOf(':') + 1))} (the gateway refuses this file)`,
          key,
        );
      else if ((universeKnown || ruleNames.size > 0) && !declared.has(form) && !ruleNames.has(form))
        add(
          'warning',
          'limit-undeclared-tool',
          path,
          `limit ${JSON.stringify(limit.name)} names ${JSON.stringify(name)}, which no rule or declaration names: it may count nothing`,
          key,
        );
    }
  });

  // Peers that are not declared agents.
  for (const [agent, spec] of Object.entries(data.agents ?? {})) {
    spec.peers?.forEach((peer, i) => {
      if (!set.agents.has(peer))
        add(
          'error',
          'undeclared-agent',
          ['agents', agent, 'peers', i],
          `agent ${JSON.stringify(agent)} names peer ${JSON.stringify(peer)}, which is not a declared agent`,
        );
    });
  }

  // Unknown tags: neither predefined nor a custom tag of a declared tool.
  const knownTags = new Set<string>(Object.values(ToolTag));
  for (const tool of set.tools) for (const t of tool.metadata.customTags) knownTags.add(t);
  for (const rule of set.rules) {
    rule.tags?.forEach((t, i) => {
      if (!knownTags.has(t))
        add(
          'error',
          'unknown-tag',
          ['rules', rule.index, 'tags', i],
          `tag ${JSON.stringify(t)} is neither predefined (${Object.values(ToolTag).join(', ')}) nor a custom tag of a declared tool`,
        );
    });
  }

  // Rules that can never match, and rules shadowed by an earlier one.
  for (const rule of set.rules) {
    const never = contradiction(rule);
    if (never)
      add(
        'error',
        'never-matches',
        ['rules', rule.index],
        `rule ${JSON.stringify(rule.name)} can never match: ${never}`,
      );
    else if (set.tools.length > 0 && !(rule.exact.length > 0 && rule.globs.length === 0)) {
      const any = [...declaredTools(set)].some((t) => selectsDeclared(rule, t));
      if (!any)
        add(
          'warning',
          'never-matches',
          ['rules', rule.index],
          `rule ${JSON.stringify(rule.name)} selects no tool the file declares`,
        );
    }
  }
  for (let j = 0; j < set.rules.length; j++) {
    const later = set.rules[j]!;
    for (let i = 0; i < j; i++) {
      const earlier = set.rules[i]!;
      if (covers(earlier, later, set)) {
        const same = earlier.result === later.result;
        add(
          same ? 'warning' : 'error',
          'shadowed-rule',
          ['rules', later.index],
          `rule ${JSON.stringify(later.name)} (${later.result}) is shadowed by rule ${JSON.stringify(earlier.name)} (${earlier.result}, line ${earlier.position.line}): every call it matches, the earlier rule matches first${same ? '' : ', so it never decides anything'}`,
        );
        break;
      }
    }
  }
  return findings.sort((a, b) => a.line - b.line || a.column - b.column);
}

interface DeclaredTool {
  readonly form: string;
  readonly namespace: string | null;
  readonly tags: ReadonlySet<string>;
}

function declaredTools(set: PolicySet): DeclaredTool[] {
  const out = new Map<string, DeclaredTool>();
  for (const t of set.tools)
    out.set(t.canonicalName, { form: t.canonicalName, namespace: t.namespace, tags: t.metadata.allTags });
  for (const a of set.agents.values()) {
    for (const n of a.tools) {
      const form = canonical(n);
      if (!out.has(form))
        out.set(form, {
          form,
          namespace: form.indexOf(':') > 0 ? form.slice(0, form.indexOf(':')) : null,
          tags: new Set(),
        });
    }
  }
  return [...out.values()];
}

function selectsDeclared(rule: PolicyRuleInfo, tool: DeclaredTool): boolean {
  if (rule.namespace !== null && tool.namespace !== rule.namespace) return false;
  if (
    rule.exact.length + rule.globs.length > 0 &&
    !rule.exact.includes(tool.form) &&
    !rule.globs.some((g) => g.test(tool.form))
  )
    return false;
  if (rule.tags !== null && !rule.tags.some((t) => tool.tags.has(t))) return false;
  return true;
}

/** Why a rule's own selectors and conditions exclude every call, or null. */
function contradiction(rule: PolicyRuleInfo): string | null {
  if (rule.namespace !== null && rule.globs.length === 0 && rule.exact.length > 0) {
    const prefix = `${rule.namespace}:`;
    if (!rule.exact.some((n) => n.startsWith(prefix)))
      return `it selects namespace ${JSON.stringify(rule.namespace)} and only tools outside it (${rule.exact.join(', ')})`;
  }
  const byArg = new Map<string, ConditionTest[]>();
  for (const t of rule.tests) byArg.set(t.arg, [...(byArg.get(t.arg) ?? []), t]);
  for (const [arg, tests] of byArg) {
    const op = (name: string): unknown => tests.find((t) => t.op === name)?.expected;
    const has = (name: string): boolean => tests.some((t) => t.op === name);
    if (op('exists') === false && tests.length > 1)
      return `argument ${JSON.stringify(arg)} must be absent and also ${tests
        .filter((t) => t.op !== 'exists')
        .map((t) => t.text)
        .join(', ')}`;
    if (has('oneOf') && (op('oneOf') as unknown[]).length === 0)
      return `argument ${JSON.stringify(arg)} must be one of an empty list`;
    // Values the other tests must accept: the one `equals` value, or each `oneOf` value.
    const candidates = has('equals') ? [op('equals')] : has('oneOf') ? (op('oneOf') as unknown[]) : null;
    if (candidates) {
      const others = tests.filter((t) => t.op !== 'equals' && t.op !== 'oneOf' && t.op !== 'exists');
      if (has('equals') && has('oneOf') && !(op('oneOf') as unknown[]).some((v) => jsonEqual(v, op('equals'))))
        return `argument ${JSON.stringify(arg)} must equal ${JSON.stringify(op('equals'))}, which is not one of ${JSON.stringify(op('oneOf'))}`;
      if (others.length > 0 && !candidates.some((v) => others.every((t) => t.test(true, v) === true))) {
        return `argument ${JSON.stringify(arg)} ${has('equals') ? `must equal ${JSON.stringify(op('equals'))}` : `must be one of ${JSON.stringify(op('oneOf'))}`} and also ${others.map((t) => t.text).join(', ')}`;
      }
    }
    const lower = Math.max(
      ...tests.filter((t) => t.op === 'gt' || t.op === 'gte').map((t) => t.expected as number),
      -Infinity,
    );
    const upper = Math.min(
      ...tests.filter((t) => t.op === 'lt' || t.op === 'lte').map((t) => t.expected as number),
      Infinity,
    );
    const open = tests.some((t) => (t.op === 'gt' && t.expected === lower) || (t.op === 'lt' && t.expected === upper));
    if (lower > upper || (lower === upper && open))
      return `argument ${JSON.stringify(arg)} must be ${tests
        .filter((t) => ['gt', 'gte', 'lt', 'lte'].includes(t.op))
        .map((t) => t.text)
        .join(' and ')}: no number is`;
  }
  return null;
}
