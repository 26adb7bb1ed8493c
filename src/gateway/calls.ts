/**
 * A tool call through the gate: dispatched on the gateway's route (its person the inbox, the stores or
 * elicitation), decided again under the policy in force after a wait, audited with its Decision, shadow
 * verdict, drift and approval, and answered to the client as MCP expects — the upstream's own result (an
 * error result too) unchanged, a refusal as an error result that says why.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { readCall } from '../formats/index.js';
import { dispatchCall, ruleAndReason, gatewayCall } from '../gate/index.js';
import type { GateContext } from '../contracts/gate.js';
import type { ToolRegistry, ToolResult } from '../registry.js';
import type { ApprovalNote } from './approvals.js';
import { gatewayRoute, type AskingRequest, type GatewayPeople } from './approvers.js';
import { auditTime, shadowOf, type GatewayAuditRecord, type ToolAuditRecord } from './audit.js';
import { upstreamTaskOf } from '../mcp/index.js';
import { inRound } from './mrtr.js';
import { PIN_BOUND_RULE, PIN_RULE } from './pin-rule.js';
import { listedDefinitionPin } from './pins.js';
import { DELIVERED, type Relay, type RelayedRequest } from './relay.js';
import type { PolicyInForce } from './policy.js';
import { stepUpFor } from './stepup.js';
import type { Upstream } from './upstream.js';
import { extensibleCopy } from './copies.js';
import { enterCallScope, leaveCallScope } from './upstream-client.js';

/** What a tool call needs of its gateway. */
export interface ToolCallDeps {
  readonly registry: ToolRegistry;
  readonly relay: Relay;
  readonly people: GatewayPeople;
  readonly audit: (record: GatewayAuditRecord) => void;
  /** The policy in force now. */
  readonly inForce: () => PolicyInForce;
}

/** One `tools/call` request. */
export interface ToolCallRequest {
  readonly server: Server;
  readonly request: RelayedRequest;
  /** Who is asking (agent, tenant, caller layers). */
  readonly context: GateContext;
  /** The context in force now, for a call decided again after a wait. */
  readonly refreshContext: () => GateContext;
  readonly asker: AskingRequest;
  readonly who: { readonly caller: string | null; readonly session: string | null };
  /** The upstream serving the tool, if any. */
  readonly upstream: Upstream | undefined;
  readonly name: string;
  readonly arguments: unknown;
}

/** Decides and runs one tool call; never throws for a refusal (it is an error result). */
export async function runToolCall(deps: ToolCallDeps, call: ToolCallRequest): Promise<CallToolResult> {
  const { registry, relay, people, audit, inForce } = deps;
  const server = call.server;
  const started = inForce();
  const startedAt = performance.now();
  const given = { id: `mcp-${randomUUID()}`, name: call.name, arguments: call.arguments };
  // A call that ran is answered with the upstream's own result (`value`): its text is never read here.
  // As `{ ...call.context, signal }`, without V8's slow path for a key added to a spread's copy (copies.ts).
  const own: { -readonly [K in keyof GateContext]: GateContext[K] } = extensibleCopy(call.context);
  own.signal = call.request.signal;
  const context: GateContext = gatewayCall(own);
  const scope = relay.scopeOf(server, call.request);
  let approval: ApprovalNote | undefined;
  // The definition the call is made against, bound into any approval it is asked for (issue 22).
  const definition = call.upstream?.connection?.definition(registry.get(call.name)?.name ?? call.name);
  const pin = definition ? listedDefinitionPin(definition) : null;
  // A call that waited for a person is decided again under the context and policy in force then (a reload
  // may have narrowed the agent's tools or changed the rules).
  const refresh = (): GateContext => ({ ...call.refreshContext(), signal: call.request.signal });
  const route = gatewayRoute(people, registry, call.asker, (n) => (approval = n), 'tool', pin, refresh);
  // The scope goes down to the upstream call by the call's id (upstream-client.ts), the gateway's own.
  enterCallScope(given.id, scope);
  let result: ToolResult;
  try {
    result = (await dispatchCall(readCall(given), context, registry, route)) as ToolResult;
  } finally {
    leaveCallScope(given.id);
  }
  const decision = result.decision;
  // The snapshot whose policy made the decision: the one the request started with, or the one in force after a wait.
  const latest = inForce();
  const decidedUnder = decision.policyVersion === latest.policy.version ? latest : started;
  const shadow = shadowOf(decidedUnder.set.policy, decidedUnder.set.shadow, registry, decision);
  const drift = decidedUnder.pins?.drift(decision.canonical);
  // A 2026-07-28 request the caller layer refused, where a scope would cover the tool: HTTP 403 and
  // insufficient_scope (stepup.ts) instead of a flat refusal; the record says so.
  const stepUp =
    decision.effect === 'deny' && decision.layer === 'caller' && inRound(server)
      ? stepUpFor(decidedUnder.set.scopes, call.name)
      : undefined;
  if (stepUp) {
    const exchange = call.request.exchange;
    if (!exchange) throw new Error('toolgate gateway: a 2026-07-28 call outside its HTTP exchange');
    exchange.stepUp = stepUp;
  }
  // Sent upstream, never answered (a timeout): recorded and told as an unknown outcome, not as a failure.
  const unanswered = result.status === 'error' && scope.result === undefined ? scope.unanswered : undefined;
  // The upstream made the call a task (the tasks extension): the client gets a handle bound to it (tasks.ts).
  const task = result.status === 'ok' ? upstreamTaskOf(scope.result) : undefined;
  // Its optional parts set on it in this order, not spread (a spread in a literal took V8's slow define path,
  // and each record got a map of its own: the sink's freeze and JSON.stringify of it off their fast paths).
  const record: { -readonly [K in keyof ToolAuditRecord]: ToolAuditRecord[K] } = {
    type: 'tool',
    time: auditTime(),
    caller: call.who.caller,
    session: call.who.session,
    upstream: call.upstream?.namespace ?? null,
    decision,
    status: result.status,
  };
  if (unanswered) {
    record.outcome = 'unknown';
    record.reason = unanswered;
  }
  record.durationMs = Math.round((performance.now() - startedAt) * 1000) / 1000;
  if (approval) record.approval = approval;
  if (stepUp) record.stepUp = { status: 403, scope: stepUp.scope };
  if (task) record.task = { status: task.status };
  // Copied only to add a shadow verdict or a drift (the common record goes to the sink as it was built).
  audit(
    shadow || drift ? { ...record, ...(shadow ? { shadow } : {}), ...(drift ? { drift: drift.diff } : {}) } : record,
  );
  // Notifications still on their way to the client go before the answer (none in transit: no hop to wait).
  const delivering = relay.delivered(server);
  if (delivering !== DELIVERED) await delivering;
  if (result.status === 'ok') return call.upstream ? (result.value as CallToolResult) : localResult(result);
  if (result.status === 'error' && call.upstream && call.upstream.state !== 'ready')
    return {
      isError: true,
      content: [
        {
          type: 'text',
          text: `toolgate gateway: upstream "${call.upstream.namespace}" went down during the call (${call.upstream.reason}); the call may not have completed. ${result.content}`,
        },
      ],
    };
  if (unanswered)
    return {
      isError: true,
      content: [{ type: 'text', text: `toolgate gateway: ${JSON.stringify(call.name)}: ${unanswered}.` }],
    };
  // The upstream's own error result is forwarded as it came.
  if (result.status === 'error' && scope.result?.isError === true) return scope.result as CallToolResult;
  if (approval && (approval.state === 'asked' || approval.state === 'pending'))
    return {
      isError: true,
      content: [
        {
          type: 'text',
          text: `This call waits for a person's approval${ruleAndReason(decision)}.`,
        },
      ],
    };
  const drifts =
    decision.rule === PIN_RULE || decision.rule === PIN_BOUND_RULE || decision.rule?.endsWith(' (drifted definition)')
      ? drift
      : undefined;
  const text = drifts ? `${result.content}\n${drifts.diff}` : result.content;
  return { isError: true, content: [{ type: 'text', text }] };
}

/**
 * What a tool of the gateway's own registry (registered by hand on `gateway.registry`, not an upstream's)
 * answered, as a `tools/call` result: its value when that is one already, else the text the gate made of it
 * (a string as it is, anything else as JSON) — not the value as is, which the client's SDK refuses (-32602).
 */
function localResult(result: ToolResult): CallToolResult {
  const value = result.value;
  // The schema defaults `content` to [] and keeps unknown keys: any object would pass it without this.
  const holds = typeof value === 'object' && value !== null && Array.isArray((value as CallToolResult).content);
  const parsed = holds ? CallToolResultSchema.safeParse(value) : undefined;
  return parsed?.success ? parsed.data : { content: [{ type: 'text', text: result.content }] };
}
