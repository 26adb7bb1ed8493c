/**
 * A loaded policy file: the compiled PermissionPolicy plus the agents, tenants, scope maps and tool
 * metadata it declares, in the shapes the registry, the gate and the runner take.
 */
import { parseScopeMap, parseTenantLimits, toolsOfScopes, type ScopeMap } from '../config.js';
import { ConfigurationError } from '../errors.js';
import type { GateContext } from '../contracts/gate.js';
import { Limiter, type LimiterOptions, type LimitRule, type TenantLimitPlan } from '../limits/limiter.js';
import { canonical, describe } from '../names.js';
import type { PermissionPolicy } from '../permissions/policy.js';
import type { PermissionResult } from '../permissions/result.js';
import { ToolRegistry } from '../registry.js';
import type { Agent, TenantLimits } from '../runner/types.js';
import type { CounterStore } from '../stores/types.js';
import { toolMetadata, type Tool } from '../tool.js';
import { compileItemRules, type ItemRules } from './items.js';
import type { ConditionTest, Glob } from './matchers.js';
import type { PolicyFileData, PolicyPosition, PolicyRuleData } from './types.js';
import type { ConfusablesMode } from '../unicode/confusables.js';

/** A rule as the file states it, compiled: what lint and explain read. */
export interface PolicyRuleInfo {
  readonly name: string;
  readonly index: number;
  readonly result: PermissionResult;
  readonly reason: string | null;
  /** Exact tool names, in canonical form. */
  readonly exact: readonly string[];
  /** Name globs, over canonical forms. */
  readonly globs: readonly Glob[];
  /** The namespace selector, in canonical form. */
  readonly namespace: string | null;
  readonly tags: readonly string[] | null;
  readonly tests: readonly ConditionTest[];
  readonly position: PolicyPosition;
  readonly data: PolicyRuleData;
}

/**
 * An agent of a policy file: the runner's own {@link Agent}, its peers the file's agents themselves (a
 * cycle of peers is a cycle of objects; the runner's depth cap stops it). Frozen.
 */
export type PolicyAgent = Agent & { readonly tools: readonly string[]; readonly peers: readonly PolicyAgent[] };

/** A tenant of a policy file: the runner's {@link TenantLimits}, `tools` a frozen array (absent: states nothing). */
export type PolicyTenantLimits = TenantLimits & { readonly tools?: readonly string[] };

/** Who is asking, by the names the policy file uses. */
export interface PolicyContextInput {
  /** An agent declared in the file. @default every registered tool, as the gate does */
  readonly agent?: string;
  /** A tenant declared in the file. @default no tenant layer */
  readonly tenant?: string;
  /** Capability scopes, mapped to tool names through the file's scope map. @default no caller layer */
  readonly scopes?: Iterable<string>;
  readonly runId?: string;
}

/** @internal */
export interface PolicySetInit {
  readonly file: string | null;
  readonly data: PolicyFileData;
  readonly policy: PermissionPolicy;
  readonly shadow?: PermissionPolicy | null;
  readonly tools: readonly Tool[];
  readonly rules: readonly PolicyRuleInfo[];
  /** The `resources:` and `prompts:` rules compiled (items.ts). @default compiled from `data` */
  readonly items?: { readonly resources: ItemRules; readonly prompts: ItemRules };
  readonly positionOf: (path: readonly (string | number)[], key?: boolean) => PolicyPosition;
}

const SCOPE_CACHE_LIMIT = 256;

/**
 * A compiled policy file. `policy` goes to `registry.setPermissionPolicy`; `context()` builds the
 * GateContext for an agent, tenant and scopes it names; `agent()` and `tenantLimits()` give the runner's
 * shapes; `registry()` builds a registry of stub tools (declared metadata, never executed) for deciding
 * calls without the real tools, as the CLI does.
 *
 * @example
 * const set = await loadPolicyFile('policy.yaml');
 * registry.setPermissionPolicy(set.policy);
 * await registry.executeToolCalls(calls, set.context({ agent: 'concierge', tenant: 'acme', scopes: ['files:read'] }));
 */
export class PolicySet {
  /** The file it was read from, or null for text. */
  readonly file: string | null;
  /** The file's content as data (schema-valid). */
  readonly data: PolicyFileData;
  readonly policy: PermissionPolicy;
  /**
   * The policy as it would be with its shadow rules (or, for `mode: shadow`, all of it) enforced; null
   * when nothing is in shadow mode. Evaluate it beside `policy` to record what shadow rules would decide.
   */
  readonly shadow: PermissionPolicy | null;
  /** The version label of the policy: a hash of the file's text. */
  readonly version: string;
  /** Stub tools for every tool the file declares metadata for; they decide calls and never run. */
  readonly tools: readonly Tool[];
  readonly rules: readonly PolicyRuleInfo[];
  /** The file's agents by name, each the runner's {@link Agent} with its peers as agents. */
  readonly agents: ReadonlyMap<string, PolicyAgent>;
  /** The file's tenants, each the runner's {@link TenantLimits}. */
  readonly tenants: ReadonlyMap<string, PolicyTenantLimits>;
  /** Capability scope → tool names: the runner's `scopes` option takes it as is. */
  readonly scopes: ScopeMap;
  /** The file's `limits:` (charge them with {@link PolicySet.limiter}). */
  readonly limits: readonly LimitRule[];
  /**
   * The `resources:` rules in the gate's rule form: a policy over the gate-level tool `resource`, whose
   * calls are `{ namespace, uri, action }` (what the gateway decides a resource read as).
   */
  readonly resources: ItemRules;
  /** The `prompts:` rules in the gate's rule form: a policy over the gate-level tool `prompt`. */
  readonly prompts: ItemRules;
  readonly #positionOf: PolicySetInit['positionOf'];
  readonly #scopeCache = new Map<string, readonly string[]>();
  readonly #toolByForm: ReadonlyMap<string, Tool>;
  readonly #tenantPlans: Readonly<Record<string, TenantLimitPlan>>;

  constructor(init: PolicySetInit) {
    this.file = init.file;
    this.data = init.data;
    this.policy = init.policy;
    this.shadow = init.shadow ?? null;
    this.version = init.policy.version;
    this.tools = Object.freeze([...init.tools]);
    this.rules = Object.freeze([...init.rules]);
    this.#positionOf = init.positionOf;
    this.#toolByForm = new Map(init.tools.map((t) => [t.canonicalName, t]));
    this.agents = agentsOf(init.data);
    this.tenants = new Map(
      Object.entries(init.data.tenants ?? {}).map(([id, t]) => [id, parseTenantLimits(t, `tenant ${describe(id)}`)]),
    );
    this.scopes = parseScopeMap(init.data.scopes ?? {}, 'policy file "scopes"');
    this.limits = Object.freeze((init.data.limits ?? []).map((l) => Object.freeze({ ...l })));
    this.#tenantPlans = tenantPlansOf(init.data);
    const items =
      init.items ??
      compileItemRules(init.data, init.policy.version, init.positionOf, (path, _code, message) => {
        throw new ConfigurationError(`${path.join('.')}: ${message}`);
      });
    this.resources = items.resources;
    this.prompts = items.prompts;
  }

  /**
   * A Limiter for the file's limits over `counters` (memory for one process; Redis, PostgreSQL or SQLite for
   * many), with the plans of the file's `tenants:` (`plan:` values and `limits:` overrides) unless `options`
   * gives `tenants` of its own.
   *
   * @example
   * const limiter = set.limiter(new RedisStores({ url }).counters);
   */
  limiter(counters: CounterStore, options: Omit<LimiterOptions, 'counters' | 'limits'> = {}): Limiter {
    return new Limiter({ tenants: this.#tenantPlans, ...options, counters, limits: this.limits });
  }

  /**
   * The agent named `name` (the runner's {@link Agent}, peers included), or a ConfigurationError listing
   * the declared agents.
   *
   * @example
   * const result = await runner.run(set.agent('concierge'), 'Refund order 42', { tenant: 'acme' });
   */
  agent(name: string): PolicyAgent {
    const agent = this.agents.get(name);
    if (!agent)
      throw new ConfigurationError(
        `agent ${describe(name)} is not declared in the policy file; declared agents: ${[...this.agents.keys()].join(', ') || '(none)'}`,
      );
    return agent;
  }

  /** The tenant `id`'s limits, or a ConfigurationError listing the declared tenants. */
  tenantLimits(id: string): PolicyTenantLimits {
    const tenant = this.tenants.get(id);
    if (!tenant)
      throw new ConfigurationError(
        `tenant ${describe(id)} is not declared in the policy file; declared tenants: ${[...this.tenants.keys()].join(', ') || '(none)'}`,
      );
    return tenant;
  }

  /**
   * The tool names a caller's scopes cover (the caller layer). A scope the file does not map covers
   * nothing: an unknown scope never widens access. Frozen and kept per scope set, so a steady caller
   * hits the gate's allowlist cache.
   */
  toolsForScopes(scopes: Iterable<string>): readonly string[] {
    const list = [...new Set(scopes)].sort();
    const key = JSON.stringify(list);
    let names = this.#scopeCache.get(key);
    if (!names) {
      names = Object.freeze(toolsOfScopes(this.scopes, list));
      if (this.#scopeCache.size >= SCOPE_CACHE_LIMIT) this.#scopeCache.clear();
      this.#scopeCache.set(key, names);
    }
    return names;
  }

  /** The GateContext for an agent, tenant and scopes named in the file. Unknown agents and tenants are ConfigurationErrors. */
  context(input: PolicyContextInput = {}): GateContext {
    const agent = input.agent === undefined ? undefined : this.agent(input.agent);
    const tenant = input.tenant === undefined ? undefined : this.tenantLimits(input.tenant);
    return {
      ...(agent ? { agent: { name: agent.name, tools: agent.tools } } : {}),
      ...(input.tenant !== undefined
        ? { tenant: { id: input.tenant, ...(tenant?.tools ? { tools: tenant.tools } : {}) } }
        : {}),
      ...(input.scopes !== undefined ? { caller: { scopes: this.toolsForScopes(input.scopes) } } : {}),
      ...(input.runId !== undefined ? { runId: input.runId } : {}),
    };
  }

  /**
   * A registry holding the stub tools, every tool named anywhere in the file (an agent, tenant or scope
   * list, or an exact rule selector) without declared metadata as a stub with none, and this policy.
   * For deciding calls only: a stub that is somehow executed throws. `confusables` is the registry's
   * option (the CLI passes 'off' and reports confusable names as lint findings instead).
   */
  registry(options: { readonly confusables?: ConfusablesMode } = {}): ToolRegistry {
    const registry = new ToolRegistry(options.confusables === undefined ? {} : { confusables: options.confusables });
    for (const tool of this.tools) registry.register(tool);
    for (const name of this.#mentionedNames()) {
      if (!registry.has(name)) registry.register({ name, parameters: { type: 'object' }, execute: refuse });
    }
    registry.setPermissionPolicy(this.policy);
    return registry;
  }

  /**
   * `tool` with the metadata the file declares for its name merged over its own (tags and custom tags
   * are replaced when the file gives them). Tools the file says nothing about come back unchanged.
   */
  withMetadata(tool: Tool): Tool {
    const spec = this.data.tools?.[this.#toolByForm.get(tool.canonicalName)?.name ?? ''];
    if (!spec) return tool;
    const own = tool.metadata;
    const metadata = toolMetadata(
      {
        tags: spec.tags ?? own.tags,
        customTags: spec.customTags ?? own.customTags,
        ...((spec.timeoutMs ?? own.timeoutMs) !== undefined ? { timeoutMs: (spec.timeoutMs ?? own.timeoutMs)! } : {}),
        concurrencySafe: spec.concurrencySafe ?? own.concurrencySafe,
        locality: spec.locality ?? own.locality,
      },
      `tool ${JSON.stringify(tool.name)} (policy file metadata)`,
    );
    return Object.freeze({ ...tool, metadata });
  }

  /** The line and column of a place in the file (`['rules', 2, 'when']`). */
  positionOf(path: readonly (string | number)[], key = false): PolicyPosition {
    return this.#positionOf(path, key);
  }

  /** Every tool name the file mentions, in declared spelling, first spelling per canonical form. */
  #mentionedNames(): string[] {
    const out = new Map<string, string>();
    const add = (name: string): void => {
      const form = canonical(name);
      if (form !== '' && !out.has(form)) out.set(form, name);
    };
    for (const tool of this.tools) add(tool.name);
    for (const agent of this.agents.values()) agent.tools.forEach(add);
    for (const tenant of this.tenants.values()) tenant.tools?.forEach(add);
    for (const names of Object.values(this.scopes)) names.forEach(add);
    for (const rule of this.rules) rule.exact.forEach(add);
    return [...out.values()];
  }
}

/**
 * The file's agents as runner Agents. Every agent object is made first, then peers are filled in, so a
 * cycle of peers becomes a cycle of objects. A peer the file does not declare is left out (lint reports it):
 * calling it is refused as an unknown tool.
 */
function agentsOf(data: PolicyFileData): ReadonlyMap<string, PolicyAgent> {
  const agents = new Map<string, { name: string; tools: readonly string[]; peers: PolicyAgent[] }>();
  for (const [name, a] of Object.entries(data.agents ?? {}))
    agents.set(name, { name, tools: Object.freeze([...a.tools]), peers: [] });
  for (const [name, a] of Object.entries(data.agents ?? {})) {
    const agent = agents.get(name)!;
    for (const peer of a.peers ?? []) {
      const known = agents.get(peer);
      if (known && !agent.peers.includes(known)) agent.peers.push(known);
    }
  }
  for (const agent of agents.values()) {
    Object.freeze(agent.peers);
    Object.freeze(agent);
  }
  return agents;
}

function refuse(): never {
  throw new ConfigurationError('this tool is declared by a policy file only; it decides calls and never runs');
}

/** The `plan:` and `limits:` of the file's tenants, as the Limiter's `tenants` option. */
function tenantPlansOf(data: PolicyFileData): Readonly<Record<string, TenantLimitPlan>> {
  const out: Record<string, TenantLimitPlan> = {};
  for (const [id, t] of Object.entries(data.tenants ?? {}))
    if (t.plan !== undefined || t.limits !== undefined)
      out[id] = Object.freeze({
        ...(t.plan !== undefined ? { plan: Object.freeze({ ...t.plan }) } : {}),
        ...(t.limits !== undefined ? { limits: Object.freeze({ ...t.limits }) } : {}),
      });
  return Object.freeze(out);
}
