/**
 * Many tenants on one gateway: who a request is for, read from its verified token. The tenant is the value
 * of one configured claim (`--tenant-claim org_id`), which must name exactly one tenant declared in the
 * policy's `tenants:` section; the agent comes from another claim (`--agent-claim`) or the route
 * (`/mcp/<agent>`), or is the gateway's own. Each request is then decided with that tenant's layer, plan
 * and limits (the policy file's `context({ agent, tenant })`, read from the policy in force), and its
 * caller layer from the token's scopes. A token naming no tenant, two, or one the policy does not declare
 * is refused with a message saying which — never served as "no tenant".
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { GateContext } from '../contracts/gate.js';
import { ConfigurationError } from '../errors.js';
import type { PolicySet } from '../policy-file/policy-set.js';

/** Where a request's tenant and agent come from. */
export interface Tenancy {
  /** The token claim naming the tenant; absent: the gateway's own tenant (single-tenant). */
  readonly tenantClaim?: string;
  /** The token claim naming the agent; absent: the route's agent, else the gateway's own. */
  readonly agentClaim?: string;
}

/** The claims of a verified token (the JWT authenticator's `extra.claims`). */
function claimsOf(auth: AuthInfo): Readonly<Record<string, unknown>> {
  const claims = auth.extra?.['claims'];
  return typeof claims === 'object' && claims !== null ? (claims as Record<string, unknown>) : {};
}

/**
 * How many times `claim` is a key of the token payload's top-level object as sent (JSON.parse keeps only the
 * last): every key read as JSON reads it, escapes decoded (`"org\u005fid"` is `org_id`).
 */
function occurrences(token: string, claim: string): number {
  const part = token.split('.')[1];
  if (part === undefined) return 0;
  const text = Buffer.from(part, 'base64url').toString('utf8');
  const stringAt = /"(?:[^"\\]|\\.)*"/y;
  const colonNext = /\s*:/y;
  let depth = 0;
  let count = 0;
  for (let at = 0; at < text.length; at++) {
    const c = text[at];
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (c === '"') {
      stringAt.lastIndex = at;
      const key = stringAt.exec(text)?.[0];
      if (key === undefined) return count; // not JSON: the verifier refused it already
      const end = at + key.length;
      colonNext.lastIndex = end;
      if (depth === 1 && colonNext.test(text) && (JSON.parse(key) as string) === claim) count++;
      at = end - 1;
    }
  }
  return count;
}

/** The one value of `claim` in the token, or why there is not exactly one. */
export function claimValue(auth: AuthInfo, claim: string, what: string): string {
  const value = claimsOf(auth)[claim];
  const named = `the token's ${what} claim ${JSON.stringify(claim)}`;
  if (occurrences(auth.token, claim) > 1) throw new Error(`${named} appears more than once: one ${what} per token`);
  if (value === undefined || value === null || value === '')
    throw new Error(`the token carries no ${what} claim ${JSON.stringify(claim)}: it names no ${what}`);
  if (Array.isArray(value))
    throw new Error(`${named} is a list (${JSON.stringify(value)}): one ${what} per token, as a string`);
  if (typeof value !== 'string') throw new Error(`${named} must be a string, got ${JSON.stringify(value)}`);
  return value;
}

/** The tenant a token is for under `policy` (declared there), or a refusal naming what is wrong. */
export function tenantOf(policy: PolicySet, auth: AuthInfo, claim: string): string {
  const tenant = claimValue(auth, claim, 'tenant');
  if (!policy.tenants.has(tenant))
    throw new Error(
      `the tenant ${JSON.stringify(tenant)} (token claim ${JSON.stringify(claim)}) is not declared in the policy's tenants: section`,
    );
  return tenant;
}

/**
 * The context of one request under the policy in force: the tenant and agent its token (or route) names,
 * the caller layer from its scopes through the policy's scope map. Throws, naming what is wrong, for a
 * token that does not name exactly one declared tenant, an unknown agent, or a claim and route that disagree.
 */
export function requestContext(
  policy: PolicySet,
  auth: AuthInfo,
  route: { readonly agent?: string },
  tenancy: Tenancy,
  own: { readonly agent?: string; readonly tenant?: string },
): GateContext {
  const tenant = tenancy.tenantClaim !== undefined ? tenantOf(policy, auth, tenancy.tenantClaim) : own.tenant;
  let agent = own.agent;
  if (tenancy.agentClaim !== undefined) {
    agent = claimValue(auth, tenancy.agentClaim, 'agent');
    if (route.agent !== undefined && route.agent !== agent)
      throw new Error(
        `the route names the agent ${JSON.stringify(route.agent)} but the token's claim ${JSON.stringify(tenancy.agentClaim)} names ${JSON.stringify(agent)}`,
      );
  } else if (route.agent !== undefined) agent = route.agent;
  if (agent !== undefined && policy.agents.get(agent) === undefined)
    throw new Error(`the agent ${JSON.stringify(agent)} is not declared in the policy's agents: section`);
  const layers = policy.context({
    ...(agent !== undefined ? { agent } : {}),
    ...(tenant !== undefined ? { tenant } : {}),
  });
  return { ...layers, caller: { id: auth.clientId, scopes: policy.toolsForScopes(auth.scopes) } };
}

/**
 * Why `tenant` may not use the upstream `namespace` under `set` (its `gateway.upstreams.<ns>.tenants`), or
 * null when it may. A request with no tenant may not use an upstream limited to tenants.
 */
export function upstreamClosedTo(set: PolicySet, namespace: string, tenant: string | undefined): string | null {
  const tenants = set.data.gateway?.upstreams?.[namespace]?.tenants;
  if (tenants === undefined || (tenant !== undefined && tenants.includes(tenant))) return null;
  return `toolgate gateway: upstream "${namespace}" serves the tenants ${tenants.map((t) => JSON.stringify(t)).join(', ')} only${tenant !== undefined ? `, not ${JSON.stringify(tenant)}` : '; this request names no tenant'}`;
}

/**
 * Whether requests of more than one tenant may use the upstream `namespace` under `set`: one limited to
 * several tenants, or one open to all where the file declares any tenant (its requests with no tenant and
 * each tenant's share it). What such an upstream logs outside any request is not given to listeners.
 */
export function sharedAcrossTenants(set: PolicySet, namespace: string): boolean {
  const tenants = set.data.gateway?.upstreams?.[namespace]?.tenants;
  return tenants !== undefined ? new Set(tenants).size > 1 : set.tenants.size > 0;
}

/** Refuses a policy whose `gateway.upstreams.<ns>.tenants` names a tenant `tenants:` does not declare. */
export function checkUpstreamTenants(set: PolicySet): void {
  const problems: string[] = [];
  for (const [namespace, upstream] of Object.entries(set.data.gateway?.upstreams ?? {}))
    for (const tenant of upstream.tenants ?? [])
      if (!set.tenants.has(tenant))
        problems.push(
          `  gateway.upstreams.${namespace}.tenants names ${JSON.stringify(tenant)}, which tenants: does not declare`,
        );
  if (problems.length > 0)
    throw new ConfigurationError(`the policy file's upstream tenants were refused:\n${problems.join('\n')}`);
}
