/**
 * The gateway's policy: a toolgate policy file (`toolgate/policy`, YAML or JSON), read with the
 * policy-file loader (`loadPolicyForProxy` is the one place `toolgate gateway` and `toolgate mcp-proxy`
 * read it), what its `tools:` section says about an upstream's tools, and the shape of the policy in force
 * (built and swapped by reload.ts; read by every request's handlers).
 */
import { formatIssue, readPolicyFile } from '../policy-file/load.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import { ConfigurationError } from '../errors.js';
import type { JsonSchema } from '../schema.js';
import type { ToolMetadataInput } from '../tool.js';
import type { GateContext } from '../contracts/gate.js';
import type { Limiter } from '../limits/limiter.js';
import type { PermissionPolicy } from '../permissions/policy.js';
import type { PinTracker } from './pins.js';
import type { GatewayUpstreamOptions } from './upstream.js';
import { canonical, namespaceOf } from '../names.js';

/**
 * Loads the gateway's policy file. A file that cannot be read or is refused is a ConfigurationError
 * listing every problem with its position: the gateway does not start.
 */
export async function loadPolicyForProxy(file: string): Promise<PolicySet> {
  const result = await readPolicyFile(file);
  if (!result.ok)
    throw new ConfigurationError(
      `the policy file ${JSON.stringify(file)} was refused:\n${result.issues.map((i) => `  ${formatIssue(i)}`).join('\n')}`,
    );
  return result.policy;
}

/**
 * The tool metadata a policy file declares (its `tools:` section), as local metadata for an upstream's
 * tools: what it states replaces what the server's annotations gave.
 */
export function policyToolMetadata(set: PolicySet): Record<string, ToolMetadataInput> {
  const out: Record<string, ToolMetadataInput> = {};
  for (const [name, spec] of Object.entries(set.data.tools ?? {})) {
    out[name] = {
      ...(spec.tags ? { tags: spec.tags } : {}),
      ...(spec.customTags ? { customTags: spec.customTags } : {}),
      ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
      ...(spec.concurrencySafe !== undefined ? { concurrencySafe: spec.concurrencySafe } : {}),
      ...(spec.locality ? { locality: spec.locality } : {}),
    };
  }
  return out;
}

/**
 * The argument schemas a policy file declares (`tools.<name>.parameters`), for the gateway to check
 * besides the upstream's own `inputSchema`: `explain`/`check` enforce them, so the gateway must too.
 */
export function policyToolParameters(set: PolicySet): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const [name, spec] of Object.entries(set.data.tools ?? {})) if (spec.parameters) out[name] = spec.parameters;
  return out;
}

/** The snapshot a request reads: everything the policy file decides, frozen. */
export interface PolicyInForce {
  readonly set: PolicySet;
  /** The gateway's own context (agent, tenant, caller layers), read by every server per request. */
  readonly context: GateContext;
  /** The pins of the lock file, or null without pinning. */
  readonly pins: PinTracker | null;
  readonly onDrift: 'refuse' | 'ask';
  /** The enforced tool policy: the file's with the pin rule. */
  readonly policy: PermissionPolicy;
  /** The file's `limits:` over the gateway's counter store (charged at step 6 of every tool call), or null. */
  readonly limiter: Limiter | null;
}

/**
 * Refuses tool rules that select by `namespace` an upstream whose tools are shown unprefixed: those tools
 * carry no namespace (`echo`, not `docs:echo`), so the rule would select none of them — a deny on
 * `namespace: docs` would let every tool of `docs` through — while the same selector on a `resources:` or
 * `prompts:` rule does select that upstream. A ConfigurationError naming the rules.
 */
export function checkToolNamespaces(set: PolicySet, upstreams: Readonly<Record<string, GatewayUpstreamOptions>>): void {
  const unprefixed = new Map<string, string>();
  for (const [namespace, upstream] of Object.entries(upstreams))
    if (upstream?.prefix === false) unprefixed.set(canonical(namespace), namespace);
  if (unprefixed.size === 0) return;
  const at = (rule: PolicySet['rules'][number]): string =>
    `  ${set.file ?? '<input>'}:${rule.position.line}:${rule.position.column}: rule ${JSON.stringify(rule.name)}`;
  // A name or glob whose literal namespace is an unprefixed upstream's (`docs:echo`, `docs:*`).
  const literalNamespace = (pattern: string): string | null => {
    const namespace = namespaceOf(pattern);
    return namespace !== null && !/[*?[\]{}\\]/.test(namespace) && unprefixed.has(namespace) ? namespace : null;
  };
  const problems: string[] = [];
  for (const rule of set.rules) {
    if (rule.namespace !== null && unprefixed.has(rule.namespace))
      problems.push(
        `${at(rule)} selects tools by namespace ${JSON.stringify(unprefixed.get(rule.namespace))}, whose upstream shows its tools unprefixed (prefix: false): they carry no namespace and the rule would select none of them; name the tools by their own names instead`,
      );
    for (const pattern of [...rule.exact, ...rule.globs.map((g) => g.pattern)]) {
      const namespace = literalNamespace(pattern);
      if (namespace !== null)
        problems.push(
          `${at(rule)} names ${JSON.stringify(pattern)}, but the upstream ${JSON.stringify(unprefixed.get(namespace))} shows its tools unprefixed (prefix: false): the rule would select none of them; name the tools by their own names instead`,
        );
    }
  }
  for (const name of Object.keys(set.data.tools ?? {})) {
    const namespace = literalNamespace(canonical(name));
    if (namespace === null) continue;
    const position = set.positionOf(['tools', name], true);
    problems.push(
      `  ${set.file ?? '<input>'}:${position.line}:${position.column}: tools: ${JSON.stringify(name)} declares metadata for a tool of the upstream ${JSON.stringify(unprefixed.get(namespace))}, which shows its tools unprefixed (prefix: false): it would apply to none of them; declare the tool by its own name instead`,
    );
  }
  // A limit's tools and costs name tools the same way: `rec:refund` of an unprefixed `rec` counts nothing.
  (set.data.limits ?? []).forEach((limit, index) => {
    const named: [string, (string | number)[]][] = [
      ...(limit.tools ?? []).map((t, i): [string, (string | number)[]] => [t, ['limits', index, 'tools', i]]),
      ...Object.keys(limit.costs ?? {}).map((t): [string, (string | number)[]] => [t, ['limits', index, 'costs', t]]),
    ];
    for (const [pattern, path] of named) {
      const namespace = literalNamespace(canonicalPattern(pattern));
      if (namespace === null) continue;
      const position = set.positionOf(path, path[2] === 'costs');
      const own = pattern.slice(pattern.indexOf(':') + 1);
      problems.push(
        `  ${set.file ?? '<input>'}:${position.line}:${position.column}: limit ${JSON.stringify(limit.name)} names ${JSON.stringify(pattern)}, but the upstream ${JSON.stringify(unprefixed.get(namespace))} shows its tools unprefixed (prefix: false): the limit would count none of them; write ${JSON.stringify(own)}`,
      );
    }
  });
  if (problems.length > 0)
    throw new ConfigurationError(`the policy file's tool rules and declarations were refused:\n${problems.join('\n')}`);
}

/**
 * Refuses a `prompts:` rule that names a prompt as clients see it (`docs:leak`): prompt rules match the
 * upstream's own prompt name, selected by `namespace:` (docs/gateway.md), so such a pattern would match
 * nothing and a deny written that way would be void. A pattern whose part before `:` is an upstream's
 * namespace, or a glob there, is refused with the form to write.
 */
export function checkPromptNames(set: PolicySet, upstreams: Readonly<Record<string, GatewayUpstreamOptions>>): void {
  const namespaces = new Map(Object.keys(upstreams).map((n) => [canonicalPattern(n), n]));
  const problems: string[] = [];
  (set.data.prompts ?? []).forEach((rule, index) => {
    const given = rule.prompts;
    const patterns = given === undefined ? [] : typeof given === 'string' ? [given] : given;
    patterns.forEach((pattern, i) => {
      const namespace = namespaceOf(canonicalPattern(pattern));
      if (namespace === null || (!namespaces.has(namespace) && !/[*?[\]{}\\]/.test(namespace))) return;
      const position = set.positionOf(
        typeof given === 'string' ? ['prompts', index, 'prompts'] : ['prompts', index, 'prompts', i],
      );
      const own = pattern.slice(pattern.indexOf(':') + 1);
      const upstream = namespaces.get(namespace) ?? pattern.slice(0, pattern.indexOf(':'));
      problems.push(
        `  ${set.file ?? '<input>'}:${position.line}:${position.column}: prompts rule ${JSON.stringify(rule.name)} names ${JSON.stringify(pattern)}, the name clients see, but prompt rules match the upstream's own prompt name: it would match nothing; write namespace: ${JSON.stringify(upstream)} with prompts: ${JSON.stringify(own)}`,
      );
    });
  });
  if (problems.length > 0)
    throw new ConfigurationError(`the policy file's prompts rules were refused:\n${problems.join('\n')}`);
}

/** A tool name or glob as rules compare it (canonical; a glob's characters kept). */
function canonicalPattern(pattern: string): string {
  try {
    return canonical(pattern);
  } catch {
    return pattern.toLowerCase();
  }
}
