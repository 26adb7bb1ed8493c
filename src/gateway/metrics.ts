/**
 * `GET /metrics`: the gateway's Prometheus metrics (prom-client), counted from the audit records it writes
 * (so a metric and the audit never disagree) and the upstreams' state read at each scrape. Cardinality is
 * bounded: a `tool` label is a tool named in the policy in force (its `tools:`, rules, agents, tenants,
 * scopes, limits) and a `tenant` label a tenant declared in `tenants:`; anything else is "other".
 * Counting never stands in the way of a call: a metric that fails is dropped, the call goes on as decided.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { canonical } from '../names.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import type { GatewayAuditRecord } from './audit.js';
import type { Gateway } from './gateway.js';

/** The gateway's metrics: fed every audit record, scraped as text. */
export interface GatewayMetrics {
  observe(record: GatewayAuditRecord): void;
  /** The gateway whose upstreams and policy the scrape reads (set once it is started). */
  bind(gateway: Pick<Gateway, 'upstreams' | 'policy'>): void;
  scrape(): Promise<{ readonly contentType: string; readonly body: string }>;
}

const OTHER = 'other';

/** The tool names and tenants a policy declares, by canonical form (cached per policy). */
const declaredOf = new WeakMap<PolicySet, { tools: Set<string>; tenants: Set<string> }>();
function declared(set: PolicySet): { tools: Set<string>; tenants: Set<string> } {
  const known = declaredOf.get(set);
  if (known) return known;
  const tools = new Set<string>();
  const add = (name: unknown): void => {
    if (typeof name === 'string') tools.add(canonical(name));
  };
  const data = set.data;
  Object.keys(data.tools ?? {}).forEach(add);
  for (const rule of set.rules) rule.exact.forEach(add);
  for (const agent of Object.values(data.agents ?? {})) (agent as { tools?: readonly string[] }).tools?.forEach(add);
  for (const tenant of Object.values(data.tenants ?? {})) tenant.tools?.forEach(add);
  for (const names of Object.values(data.scopes ?? {})) names.forEach(add);
  for (const limit of data.limits ?? []) limit.tools?.forEach(add);
  const result = { tools, tenants: new Set(Object.keys(data.tenants ?? {})) };
  declaredOf.set(set, result);
  return result;
}

/** A fresh registry with the gateway's metrics (and the process's default ones). */
export function gatewayMetrics(): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  let gateway: Pick<Gateway, 'upstreams' | 'policy'> | null = null;
  const decisions = new Counter({
    name: 'toolgate_decisions_total',
    help: 'Tool calls decided, by effect, stage (allowlist, policy, handler, limit, store, …), tenant and tool',
    labelNames: ['effect', 'stage', 'tenant', 'tool'] as const,
    registers: [registry],
  });
  const asks = new Counter({
    name: 'toolgate_asks_total',
    help: 'Tool calls a person was asked about, by how they were answered (allow, deny)',
    labelNames: ['answer', 'tenant', 'tool'] as const,
    registers: [registry],
  });
  const limitRefusals = new Counter({
    name: 'toolgate_limit_refusals_total',
    help: 'Tool calls refused by a limit (stage limit), by tenant and tool',
    labelNames: ['tenant', 'tool'] as const,
    registers: [registry],
  });
  const storeErrors = new Counter({
    name: 'toolgate_store_errors_total',
    help: 'Tool calls refused because a store could not be reached or answered garbage (stage store)',
    labelNames: ['tenant'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'toolgate_tool_call_duration_seconds',
    help: 'Tool calls that ran upstream, from the request to its answer (decision and upstream call)',
    labelNames: ['upstream', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const reloads = new Counter({
    name: 'toolgate_reloads_total',
    help: 'Policy reloads, by result (ok, refused: the policy in force kept, held: waiting for approval)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const drifts = new Counter({
    name: 'toolgate_pin_drifts_total',
    help: 'Tool definitions seen drifted from their pin, by upstream',
    labelNames: ['upstream'] as const,
    registers: [registry],
  });
  const refusedRequests = new Counter({
    name: 'toolgate_refused_requests_total',
    help: 'HTTP requests refused before any decision (Host not allowed, tenant not named, admin scope missing)',
    registers: [registry],
  });
  const adminActions = new Counter({
    name: 'toolgate_admin_actions_total',
    help: 'Admin API actions, by action and whether they succeeded',
    labelNames: ['action', 'ok'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'toolgate_upstream_up',
    help: 'Whether an upstream is connected (1) or not (0), read at each scrape',
    labelNames: ['upstream', 'state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const u of gateway?.upstreams.values() ?? [])
        this.set({ upstream: u.namespace, state: u.state }, u.state === 'ready' ? 1 : 0);
    },
  });
  const upstreamLabel = (namespace: string | null): string =>
    namespace !== null && gateway?.upstreams.has(namespace) ? namespace : OTHER;
  return {
    bind(g) {
      gateway = g;
    },
    observe(record) {
      try {
        const known = gateway ? declared(gateway.policy) : { tools: new Set<string>(), tenants: new Set<string>() };
        switch (record.type) {
          case 'tool': {
            const d = record.decision;
            if (!d) return;
            const tenant =
              d.tenant !== null && known.tenants.has(d.tenant) ? d.tenant : d.tenant === null ? 'none' : OTHER;
            const tool = known.tools.has(d.canonical) ? d.canonical : OTHER;
            decisions.inc({ effect: d.effect, stage: d.stage, tenant, tool });
            if (d.asked !== null) asks.inc({ answer: d.effect, tenant, tool });
            if (d.stage === 'limit') limitRefusals.inc({ tenant, tool });
            if (d.stage === 'store') storeErrors.inc({ tenant });
            if ((record.status === 'ok' || record.status === 'error') && record.durationMs !== undefined)
              latency.observe(
                { upstream: upstreamLabel(record.upstream), status: record.status },
                record.durationMs / 1000,
              );
            return;
          }
          case 'mode':
            if (record.event === 'reload') reloads.inc({ result: 'ok' });
            else if (record.event === 'refused') reloads.inc({ result: 'refused' });
            else if (record.event === 'held') reloads.inc({ result: 'held' });
            return;
          case 'pin':
            if (record.event === 'drift') drifts.inc({ upstream: upstreamLabel(record.upstream) });
            return;
          case 'access':
            refusedRequests.inc();
            return;
          case 'admin':
            adminActions.inc({ action: record.action, ok: String(record.ok) });
            return;
          default:
            return;
        }
      } catch {
        // A metric that cannot be counted is dropped; the call it counts is not affected.
      }
    },
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
