/**
 * Step 6 of the dispatch path, for limits: the attempt of one call is charged against the registry's
 * Limiter, on every route (registry, runner, adapters, gateway), whatever the Decision so far. A call the
 * policy refused is still counted (refused calls count); an allowed call that does not fit becomes a refusal
 * at stage `limit` and spends nothing; one whose counter store failed or answered garbage, a refusal at stage
 * `store`. Internal: dispatch.ts calls it.
 */
import type { Decision } from '../decision.js';
import type { GateContext } from '../gate/precheck.js';
import type { Tool } from '../tool.js';
import type { Limiter, LimitSubject, LimitVerdict } from './limiter.js';

/** Who is calling what, as a limit sees it. */
export function limitSubject(decision: Decision, tool: Tool | null, context: GateContext): LimitSubject {
  const tags = tool ? [...tool.metadata.allTags] : [];
  return {
    tenant: decision.tenant,
    caller: typeof context.caller?.id === 'string' ? context.caller.id : null,
    agent: decision.agent,
    runId: decision.runId,
    tool: decision.canonical,
    tags,
  };
}

/** Charges one attempt; a Limiter that throws (it should not: it refuses on store failures) refuses too. */
export async function chargeLimits(
  limiter: Limiter,
  decision: Decision,
  tool: Tool | null,
  context: GateContext,
): Promise<LimitVerdict> {
  try {
    return await limiter.charge(limitSubject(decision, tool, context));
  } catch (error) {
    return {
      allowed: false,
      stage: 'limit',
      limit: '(limiter)',
      counter: null,
      retryAfterMs: null,
      reason: `The call was not run: its limits could not be checked (${error instanceof Error ? error.message : String(error)}).`,
    };
  }
}
