/**
 * An ask on its way through the path (dispatch.ts, batch.ts): announced (`permission_asked`) and resolved by
 * the one precedence (approval.ts's resolveAsk), edited arguments passing the gate again; and the events of a
 * final Decision (`permission_denied`, `tool_decided`). With dispatch.ts and batch.ts, which call these, the
 * only emitter of those three events.
 */
import type { GateContext, GateEnvironment } from '../contracts/gate.js';
import type { ApprovalRequest } from '../contracts/approval.js';
import type { Route } from '../contracts/route.js';
import type { Decision } from '../decision.js';
import type { NormalizedCall, UnreadableCall } from '../formats/index.js';
import type { Tool } from '../tool.js';
import { resolveAsk } from './approval.js';
import { allow, deny, precheck, type Precheck } from './precheck.js';

type Call = NormalizedCall | UnreadableCall;
/** A call the policy put to a person (or a handler): steps 1–5 gave an ask. */
type Ask = Extract<Precheck, { kind: 'ask' }>;

/** An ask resolved: its Decision, the tool and snapshot it runs with, and the request when it is left pending. */
export interface Asked {
  readonly decision: Decision;
  readonly tool: Tool | null;
  readonly args: Readonly<Record<string, unknown>> | null;
  readonly answered: boolean;
  readonly pending: ApprovalRequest | null;
}

/** An ask, announced and resolved by the one precedence; edited arguments pass the gate again. */
export async function resolveCallAsk(
  ask: Ask,
  call: Call,
  context: GateContext,
  env: GateEnvironment,
  route: Route,
  mayPend: boolean,
): Promise<Asked> {
  const resolution = await resolveAsk(ask, context, env, route, {
    pending: mayPend,
    announce: () => announceAsk(env, ask),
  });
  let decision: Decision;
  let tool: Tool | null = ask.tool;
  let args: Readonly<Record<string, unknown>> | null = ask.args;
  let pending: ApprovalRequest | null = null;
  if (resolution.kind === 'pending') {
    pending = resolution.request;
    decision = deny(
      { ...ask.base, asked: route.name },
      { stage: 'handler', by: 'handler', layer: null },
      `${ask.base.reason}; waiting for approval`,
    );
  } else if (resolution.kind === 'edited') {
    // An edited call is a new call: validation, allowlist and rules again. An ask on exactly these
    // arguments is what the person answered.
    const edited = await precheck(
      { id: call.id, name: call.name, arguments: resolution.arguments, format: call.format },
      context,
      env,
    );
    tool = edited.tool;
    args = edited.args;
    decision =
      edited.kind === 'decided'
        ? edited.decision
        : allow(
            { ...edited.base, asked: resolution.base.asked },
            'handler',
            `${edited.base.reason} (approved with edited arguments)`,
          );
  } else {
    decision = resolution.decision;
  }
  return { decision, tool, args, answered: decision.effect === 'allow' && decision.asked !== null, pending };
}

/** The `permission_asked` event of an ask. */
export function announceAsk(env: GateEnvironment, ask: Ask): void {
  env.emit({
    type: 'permission_asked',
    tool: ask.tool.name,
    callId: ask.base.callId,
    reason: ask.request.reason,
    ruleName: ask.request.ruleName,
    parameters: ask.args,
  });
}

/** The events of a final Decision. */
export function announce(env: GateEnvironment, decision: Decision): void {
  if (decision.effect === 'deny') {
    env.emit({
      type: 'permission_denied',
      tool: decision.tool,
      callId: decision.callId,
      reason: decision.reason,
      ruleName: decision.rule,
      parameters: decision.parameters,
      decision,
    });
  }
  env.emit({ type: 'tool_decided', decision });
}
