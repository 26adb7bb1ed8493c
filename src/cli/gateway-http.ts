/**
 * `toolgate gateway --http`: the options that shape the HTTP front (Streamable HTTP, bearer JWTs, tenancy
 * claims, /approvals, /readyz, /metrics, the admin API) handed to serveGatewayHttp. The HTTP modules are
 * loaded only here, and only with --http.
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { adminApi } from '../gateway/admin.js';
import { approversOf } from '../gateway/answers.js';
import type { GatewayApprovals } from '../gateway/approvals.js';
import { safeSink, type GatewayAuditSink } from '../gateway/audit.js';
import { gatewayConfigOf } from '../gateway/config.js';
import type { Gateway } from '../gateway/gateway.js';
import { readiness, type StoreProbe } from '../gateway/health.js';
import type { GatewayHttpServer } from '../gateway/http.js';
import type { GatewayMetrics } from '../gateway/metrics.js';
import type { GatewayReloadResult } from '../gateway/reload.js';
import type { GatewayCliOptions } from './gateway-options.js';

/** What the gateway's start made for the HTTP front beside the options. */
export interface HttpParts {
  readonly tls: { readonly cert: Buffer; readonly key: Buffer } | undefined;
  readonly audit: GatewayAuditSink | undefined;
  readonly metrics: GatewayMetrics | undefined;
  /** /readyz's store checks (the array the start fills). */
  readonly probes: StoreProbe[];
  readonly approvals: GatewayApprovals | undefined;
  /** The admin API's reload: the one SIGHUP does. */
  readonly reload: (who: string) => Promise<GatewayReloadResult>;
}

/** Serves `gateway` over HTTP on `port` (`options.http`), closing the gateway when that fails. */
export async function serveOverHttp(
  gateway: Gateway,
  port: number,
  options: GatewayCliOptions,
  parts: HttpParts,
): Promise<GatewayHttpServer> {
  const metrics = parts.metrics;
  const { serveGatewayHttp } = await import('../gateway/http.js');
  const { jwtAuthenticator } = await import('../gateway/auth.js');
  const { requestContext, tenantOf } = await import('../gateway/tenancy.js');
  const tenancy = {
    ...(options.tenantClaim !== undefined ? { tenantClaim: options.tenantClaim } : {}),
    ...(options.agentClaim !== undefined ? { agentClaim: options.agentClaim } : {}),
  };
  // Who may answer /approvals: the policy in force's approvers, for the gateway's tenant — or, with
  // --tenant-claim, the approver token's own tenant (a token naming none acts for no tenant).
  const approversFor = (auth: AuthInfo) => {
    if (options.tenantClaim === undefined) return approversOf(gateway.policy, gateway.context.tenant?.id);
    try {
      return approversOf(gateway.policy, tenantOf(gateway.policy, auth, options.tenantClaim));
    } catch {
      return { ...approversOf(gateway.policy, undefined), tenants: [] };
    }
  };
  return serveGatewayHttp(gateway, {
    port,
    host: options.host,
    allowNonLoopback: true,
    ...(options.allowedHost ? { allowedHosts: options.allowedHost } : {}),
    ...(options.trustedProxy ? { trustedProxies: options.trustedProxy } : {}),
    ...(parts.tls ? { tls: parts.tls } : {}),
    ...(parts.audit ? { audit: safeSink(parts.audit) } : {}),
    readiness: readiness(gateway, parts.probes),
    ...(metrics ? { metrics: () => metrics.scrape() } : {}),
    ...(options.adminScope !== undefined
      ? {
          admin: adminApi({
            scope: options.adminScope,
            gateway,
            lockFile: () => gatewayConfigOf(gateway.policy).pins?.file ?? null,
            reload: parts.reload,
            audit: safeSink(parts.audit),
          }),
        }
      : {}),
    authenticate: options.auth
      ? jwtAuthenticator({
          jwksUrl: options.jwksUrl!,
          ...(options.jwtIssuer ? { issuer: options.jwtIssuer } : {}),
          ...(options.jwtAllowNoExp ? { allowNoExp: true } : {}),
        })
      : null,
    ...(options.stateless ? { stateless: true } : {}),
    ...(options.resource ? { resource: options.resource } : {}),
    ...(options.authorizationServer ? { authorizationServers: options.authorizationServer } : {}),
    // RFC 9728 `scopes_supported`: the policy in force's scope map (a reload changes it).
    scopesSupported: () => Object.keys(gateway.policy.scopes),
    // Who may answer: the policy in force's approvers and the tenant (THE approver check).
    ...(parts.approvals ? { approvals: { store: parts.approvals.store, approvers: approversFor } } : {}),
    // The agent a route /mcp/<agent> names, unless the gateway serves one agent (--agent).
    ...(options.agent === undefined && options.auth ? { routeAgents: true } : {}),
    // The policy in force now: a reload changes what the scopes cover, and the tenants' plans.
    context: (auth, route) => requestContext(gateway.policy, auth, route, tenancy, {}),
  }).catch(async (error: unknown) => {
    await gateway.close();
    throw error;
  });
}
