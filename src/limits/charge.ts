/**
 * Step 6 of the dispatch path, for limits: the attempt of one call is charged against the registry's
 * Limiter, on every route (registry, runner, adapters, gateway), whatever the Decision so far. A call the
 * policy refused is still counted (refused calls count); an allowed call that does not fit becomes a refusal
 * at stage `limit` and spends nothing; one whose counter store failed or answered garbage, a refusal at stage
 * `store`. The registry turns its Limiter into its meter here ({@link limiterMeter}); the gate charges it
 * through the Meter contract and never imports this folder.
 */
import type { Decision } from '../decision.js';
import { describe } from '../names.js';
import type { Attempt, GateContext, Meter, Refusal } from '../contracts/gate.js';
import type { Tool } from '../tool.js';
import type { Limiter, LimitSubject, LimitVerdict } from './limiter.js';

/**
 * Who is calling what, as a limit sees it. A caller id that is neither a string nor absent (a numeric claim
 * mapped as is) throws — the call is refused, its limits uncheckable — rather than be keyed as no caller,
 * which put every such caller on one counter with the calls of none.
 */
export function limitSubject(decision: Decision, tool: Tool | null, context: GateContext): LimitSubject {
  const tags = tool ? [...tool.metadata.allTags] : [];
  const caller: unknown = context.caller?.id;
  if (caller !== undefined && caller !== null && typeof caller !== 'string')
    throw new TypeError(
      `the context's caller.id is ${describe(caller)}, not a string: no limit can be kept per caller`,
    );
  return {
    tenant: decision.tenant,
    caller: caller ?? null,
    agent: decision.agent,
    runId: decision.runId,
    tool: decision.canonical,
    tags,
  };
}

/** Charges one attempt; a Limiter that throws (it should not: it refuses on store failures) refuses too. */
export function chargeLimits(
  limiter: Limiter,
  decision: Decision,
  tool: Tool | null,
  context: GateContext,
): Promise<LimitVerdict> {
  // The Limiter's own promise, with no async frame of ours around it (one promise step fewer per call).
  try {
    return Promise.resolve(limiter.charge(limitSubject(decision, tool, context))).then(checked, uncheckable);
  } catch (error) {
    return Promise.resolve(uncheckable(error));
  }
}

/** The Limiter's verdict, or (one that is not a verdict: a registry takes any object with a `charge`) a refusal. */
function checked(verdict: LimitVerdict): LimitVerdict {
  const v: unknown = verdict;
  if (typeof v === 'object' && v !== null) {
    const { allowed, stage, reason } = v as Record<string, unknown>;
    if (allowed === true) return verdict;
    if (allowed === false && (stage === 'limit' || stage === 'store') && typeof reason === 'string') return verdict;
  }
  return uncheckable(new Error(`the Limiter answered ${describe(v)}, not a verdict`));
}

function uncheckable(error: unknown): LimitVerdict {
  return {
    allowed: false,
    stage: 'limit',
    limit: '(limiter)',
    counter: null,
    retryAfterMs: null,
    reason: `The call was not run: its limits could not be checked (${error instanceof Error ? error.message : String(error)}).`,
  };
}

/**
 * The Limiter as a meter: the registry's own, charged at step 6 of every dispatch on every route (after the
 * route's own meter). A verdict that does not allow is a refusal at its stage (`limit`, or `store` when the
 * counter store failed); a Limiter that throws refuses too.
 *
 * @example
 * const meter = limiterMeter(new Limiter({ counters, limits: [{ name: 'refunds', tools: ['refund'], max: 5, window: '1h' }] }));
 */
export function limiterMeter(limiter: Limiter): Meter {
  return {
    charge(attempt: Attempt): Promise<Refusal | null> {
      // chargeLimits(…).then(refusalOf) in one step: the Limiter's promise, checked and turned into a refusal.
      try {
        return Promise.resolve(limiter.charge(limitSubject(attempt.decision, attempt.tool, attempt.context))).then(
          checkedRefusal,
          uncheckableRefusal,
        );
      } catch (error) {
        return Promise.resolve(uncheckableRefusal(error));
      }
    },
  };
}

function refusalOf(verdict: LimitVerdict): Refusal | null {
  return verdict.allowed === true ? null : { stage: verdict.stage, reason: verdict.reason };
}

function checkedRefusal(verdict: LimitVerdict): Refusal | null {
  return refusalOf(checked(verdict));
}

function uncheckableRefusal(error: unknown): Refusal | null {
  return refusalOf(uncheckable(error));
}
