/**
 * TEMPORARY (issue 10): what AgentRunner still calls directly until it is moved onto `dispatchCalls` with
 * a runner Route (H10b). Each function here is a thin use of the one path's own parts; delete this file
 * when src/runner/ no longer imports it.
 */
import type { Decision, DecisionBase } from '../decision.js';
import type { PermissionRequest } from '../permissions/handler.js';
import type { ToolResult } from '../registry.js';
import type { Tool } from '../tool.js';
import { resolveAsk, type AskOutcome } from './approval.js';
import { announceAsk, announceDecision } from './dispatch.js';
import { executeDecided } from './execute.js';
import type { GateContext, GateEnvironment, Precheck } from './precheck.js';
import { refused } from './execute.js';
import type { Route } from './route.js';

export { announceAsk, announceDecision };

/** The runner's handler as the route's person: 'allow' | 'deny' | 'pending' (anything else denies). */
export async function resolveRunnerAsk(
  ask: Extract<Precheck, { kind: 'ask' }>,
  env: GateEnvironment,
  handler: ((request: PermissionRequest) => unknown) | null,
  asked: 'runner' | 'adapter' = 'runner',
): Promise<
  Decision | { readonly effect: 'pending'; readonly base: DecisionBase; readonly request: PermissionRequest }
> {
  const route: Route = handler
    ? {
        name: asked,
        grouped: false,
        async ask(): Promise<AskOutcome> {
          const answer = await handler(ask.request);
          if (answer === 'allow' || answer === 'deny' || answer === 'pending') return { effect: answer };
          return answer as AskOutcome; // not an answer: the gate denies it as invalid
        },
      }
    : { name: asked, grouped: false };
  const resolution = await resolveAsk(ask, {}, env, route);
  if (resolution.kind === 'pending') return { effect: 'pending', base: { ...ask.base, asked }, request: ask.request };
  if (resolution.kind === 'edited') throw new TypeError('toolgate internal error: the runner bridge edits nothing');
  return resolution.decision;
}

/** Step 7 for an allow Decision (a deny returns its refusal). */
export function runAllowed(
  env: GateEnvironment,
  tool: Tool,
  args: Readonly<Record<string, unknown>>,
  decision: Decision,
  context: GateContext,
): Promise<ToolResult> {
  if (decision.effect !== 'allow') return Promise.resolve(refused(decision));
  return executeDecided(
    {
      index: 0,
      call: { id: decision.callId, name: decision.tool, arguments: args, format: 'toolgate' },
      decision,
      tool,
      args,
    },
    context,
    env,
  );
}
