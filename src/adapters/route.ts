/**
 * The adapters' one way onto the gate. Every adapter (AI SDK, OpenAI Agents, the MCP gateway) decides a
 * call here and executes it only through the registry's execute step (`RUN_ALLOWED`) with an allow Decision; none of them
 * holds gate logic of its own. Internal: not exported from any entry point.
 */
import type { Decision, DenyDecision } from '../decision.js';
import { readCall } from '../formats/index.js';
import { previewCall } from '../gate/dispatch.js';
import { environmentOf } from '../gate/environment.js';
import { deny, refusalContent, type GateContext, type GateEnvironment, type Precheck } from '../gate/precheck.js';
import { announceAsk as emitAsk, announceDecision, resolveRunnerAsk, runAllowed } from '../gate/runner-bridge.js';
import { chargeLimits } from '../limits/charge.js';
import type { PermissionHandler, PermissionRequest } from '../permissions/handler.js';
import type { ToolRegistry, ToolResult } from '../registry.js';
import type { Tool } from '../tool.js';

/** A call as an adapter receives it from its SDK. */
export interface AdapterCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: unknown;
}

/** Steps 1–5 before any ask is resolved; emits nothing (the SDK may ask again before it executes). */
export async function check(registry: ToolRegistry, call: AdapterCall, context: GateContext): Promise<Precheck> {
  return previewCall(
    readCall({ id: call.id, name: call.name, arguments: call.arguments }),
    context,
    environmentOf(registry),
  );
}

/** The ask part of a precheck. */
export type Ask = Extract<Precheck, { kind: 'ask' }>;

/**
 * Resolves a precheck to a final Decision and emits its events (step 8). An ask goes to the policy's own
 * handler if it has one, else to `approver` (the SDK's own approval flow) when given, else to the
 * registry's handler (the gate's chain, with the approver as the route's handler).
 */
export async function settle(
  registry: ToolRegistry,
  pre: Precheck,
  approver?: PermissionHandler,
  options: { readonly alreadyAsked?: boolean; readonly context?: GateContext } = {},
): Promise<Decided> {
  const env = environmentOf(registry);
  if (pre.kind === 'decided') {
    const decision = await limited(env, pre.decision, pre.tool, options.context);
    announceDecision(env, decision);
    return { ...pre, decision };
  }
  if (!options.alreadyAsked) announceAsk(registry, pre);
  const resolved = await resolveRunnerAsk(
    pre,
    env,
    approver ? (request) => asFunction(approver)(request) : null,
    'adapter',
  );
  const decision = resolved.effect === 'pending' ? null : resolved;
  if (decision === null) throw new TypeError('toolgate internal error: an adapter approver left an ask pending');
  const charged = await limited(env, decision, pre.tool, options.context);
  announceDecision(env, charged);
  return { decision: charged, tool: pre.tool, args: pre.args };
}

/** Step 6 for limits (with the caller's context): refused calls count; an allowed call over a limit is refused. */
async function limited(
  env: GateEnvironment,
  decision: Decision,
  tool: Tool | null,
  context: GateContext | undefined,
): Promise<Decision> {
  if (!env.limiter || context === undefined) return decision;
  const verdict = await chargeLimits(env.limiter, decision, tool, context);
  return !verdict.allowed && decision.effect === 'allow'
    ? deny(decision, { stage: 'limit', by: 'limit', layer: null }, verdict.reason)
    : decision;
}

/** Emits `permission_asked` for an ask (once per ask: an SDK that puts it to a person emits it then). */
export function announceAsk(registry: ToolRegistry, ask: Ask): void {
  emitAsk(environmentOf(registry), ask);
}

/** A final Decision with what is needed to run the call. */
export interface Decided {
  readonly decision: Decision;
  readonly tool: Tool | null;
  readonly args: Readonly<Record<string, unknown>> | null;
}

/** Step 7: runs the call if, and only if, its Decision allows it; a refusal is returned as its error result. */
export async function run(registry: ToolRegistry, decided: Decided, context: GateContext): Promise<ToolResult> {
  const { decision, tool, args } = decided;
  if (decision.effect !== 'allow' || !tool || !args)
    return runAllowed(environmentOf(registry), tool!, args!, decision as DenyDecision, context);
  return runAllowed(environmentOf(registry), tool, args, decision, context);
}

/** Decides and runs one call (an ask goes to `approver`, else to the handlers). */
export async function dispatchOne(
  registry: ToolRegistry,
  call: AdapterCall,
  context: GateContext,
  approver?: PermissionHandler,
): Promise<ToolResult> {
  return run(registry, await settle(registry, await check(registry, call, context), approver, { context }), context);
}

function asFunction(handler: PermissionHandler): (request: PermissionRequest) => unknown {
  return typeof handler === 'function' ? handler : (request) => handler.handle(request);
}

/**
 * Whether an ask may be put to the SDK's approval flow: not when the policy has its own handler, which
 * the gate asks first (the SDK's answer would not be the one that counts).
 */
export function sdkMayAsk(registry: ToolRegistry): boolean {
  return !registry.getPermissionPolicy()?.handler;
}

/** An approver that says yes: the SDK's approval flow already asked a person and they approved. */
export const APPROVED: PermissionHandler = () => 'allow';
/** An approver that says no: the SDK's approval flow asked a person and they refused. */
export const REJECTED: PermissionHandler = () => 'deny';

export { refusalContent };
