/**
 * THE approval model's one implementation and its entry (its types are src/contracts/approval.ts). Here:
 * the one precedence that decides who answers an ask,
 *
 *   the policy's own handler → the route's person (`route.person`) → the registry's handler → the fallback
 *
 * An approval that does not verify (its MAC, its expiry, a nonce already used, or a binding that names
 * another owner, agent, call, tool, arguments, rule, policy version, pin, caller or tenant) is handled one way: the
 * call is denied at stage `handler`, by `approval_invalid`, with a reason naming what failed.
 *
 * A route with a person binds its requests under the secret its OWNER sets (`ApprovalSettings.secret`):
 * never a key of this process, so an id minted on one worker verifies on another. The registry's own route
 * has no person and mints no request. How a binding and a request id are minted, the one `sameBinding` and
 * the one sign/verify of an answer are approval-binding.ts's, re-exported below: import them from here.
 */
import type { Answer, ApprovalRequest } from '../contracts/approval.js';
import type { GateContext, GateEnvironment } from '../contracts/gate.js';
import type { Route } from '../contracts/route.js';
import type { Decision, DecisionBase } from '../decision.js';
import { callHandler, errorText, type PermissionHandler } from '../permissions/handler.js';
import { approvalRequest, readAnswer } from './approval-binding.js';
import { allow, deny, type Precheck } from './precheck.js';

export {
  approvalRequest,
  bindingOf,
  callBinding,
  consumeNonce,
  requestIdOf,
  requestOf,
  sameBinding,
  settingsSecret,
  signAnswer,
  verifyAnswer,
  type BindingParts,
  type RequestShown,
} from './approval-binding.js';

/** How an ask ended: a Decision, pending (no Decision yet), or allowed with edited arguments that must pass the gate again. */
export type Resolution =
  | { readonly kind: 'decided'; readonly decision: Decision; readonly answer: Answer | null }
  | { readonly kind: 'pending'; readonly request: ApprovalRequest }
  | {
      readonly kind: 'edited';
      readonly arguments: Readonly<Record<string, unknown>>;
      readonly answer: Answer;
      readonly base: DecisionBase;
    };

/**
 * Resolves an ask by the one precedence: the policy's own handler, else the route's person, else the
 * registry's handler, else the registry's fallback. A handler or person that throws, times out or answers
 * anything else denies; `pending` is an answer only from a route's person.
 */
export async function resolveAsk(
  ask: Extract<Precheck, { kind: 'ask' }>,
  context: GateContext,
  env: GateEnvironment,
  route: Route,
  options: { readonly pending?: boolean; readonly announce?: () => void } = {},
): Promise<Resolution> {
  // `permission_asked` goes out once, before whoever answers is asked — except for a request the route
  // itself put to its person earlier and announced then (a verified request it issued; never client data).
  let announced = false;
  const announce = (): void => {
    if (announced) return;
    announced = true;
    options.announce?.();
  };
  const policyHandler = env.policy?.handler ?? null;
  if (policyHandler) {
    announce();
    return fromHandler(ask, env, policyHandler, 'policy');
  }
  const person = await askPerson(ask, context, env, route, options, announce, () => (announced = true));
  if (person !== null) return person;
  announce();
  if (env.handler) return fromHandler(ask, env, env.handler, 'registry');
  const fallback = env.handlerFallback;
  const decision =
    fallback === 'allow'
      ? allow(ask.base, 'fallback', `${ask.base.reason} (asked, no handler; the fallback allows)`)
      : deny(
          ask.base,
          { stage: 'policy', by: 'no_handler', layer: null },
          `${ask.base.reason}; approval was required and no permission handler is set`,
        );
  return { kind: 'decided', decision, answer: null };
}

/** The route's person, if it has one for this request: null passes the ask on to the registry's handler. */
async function askPerson(
  ask: Extract<Precheck, { kind: 'ask' }>,
  context: GateContext,
  env: GateEnvironment,
  route: Route,
  options: { readonly pending?: boolean },
  announce: () => void,
  alreadyAnnounced: () => void,
): Promise<Resolution | null> {
  const routePerson = route.person;
  if (routePerson) {
    const request = approvalRequest(ask, context, routePerson.approvals);
    if (routePerson.announced?.(request) === true) alreadyAnnounced();
    else announce();
    const person = routePerson.ask.bind(routePerson);
    const outcome = await callHandler<ApprovalRequest>(person, request, env.handlerTimeoutMs, { raw: true });
    const base: DecisionBase = { ...ask.base, asked: route.name };
    if (outcome.failure !== undefined)
      return { kind: 'decided', decision: handlerFailure(base, outcome), answer: null };
    const value = outcome.value;
    if (value === null) return null;
    if (typeof value === 'object' && value !== null) {
      const effect = (value as { effect?: unknown }).effect;
      if (effect === 'pending') {
        if (options.pending === false)
          return {
            kind: 'decided',
            decision: deny(
              base,
              { stage: 'handler', by: 'approval_invalid', layer: null },
              `${ask.base.reason}; the registry or policy changed after the call was approved, so it needs a new approval`,
            ),
            answer: null,
          };
        return { kind: 'pending', request };
      }
      if (effect === 'invalid') {
        const reason = (value as { reason?: unknown }).reason;
        return {
          kind: 'decided',
          decision: deny(
            base,
            { stage: 'handler', by: 'approval_invalid', layer: null },
            `${ask.base.reason}; ${typeof reason === 'string' ? clip(reason) : 'the approval does not verify'}, so the call is denied`,
          ),
          answer: null,
        };
      }
    }
    const answer = readAnswer(value);
    if ('invalid' in answer)
      return {
        kind: 'decided',
        decision: deny(
          base,
          { stage: 'handler', by: 'handler_invalid', layer: null },
          `${ask.base.reason}; ${answer.invalid}, so the call is denied`,
        ),
        answer: null,
      };
    if (answer.settle !== undefined) {
      try {
        await answer.settle();
      } catch (error) {
        return {
          kind: 'decided',
          decision: handlerFailure(base, {
            failure: 'threw',
            detail: `keeping the approver's answer failed: ${errorText(error)}`,
          }),
          answer: null,
        };
      }
    }
    if (answer.effect === 'allow' && answer.arguments !== undefined)
      return { kind: 'edited', arguments: answer.arguments, answer, base };
    return { kind: 'decided', decision: fromAnswer(base, answer), answer };
  }
  return null;
}

/** The Decision an Answer makes. */
function fromAnswer(base: DecisionBase, answer: Answer): Decision {
  if (answer.recalled !== undefined) {
    return answer.effect === 'allow'
      ? allow(base, 'handler', `${base.reason} (approved earlier for this ${answer.recalled})`)
      : deny(
          base,
          { stage: 'handler', by: 'handler', layer: null },
          `${base.reason}; the approver denied it earlier for this ${answer.recalled}`,
        );
  }
  if (answer.effect === 'allow') return allow(base, 'handler', `${base.reason} (approved)`);
  if (answer.waiting !== undefined)
    return deny(
      base,
      { stage: 'handler', by: 'handler', layer: null },
      `${base.reason}; it waits for a person's approval ${clip(answer.waiting)} and has not run; make the same call again once it is answered`,
    );
  if (answer.unasked !== undefined)
    return deny(
      base,
      { stage: 'handler', by: 'handler', layer: null },
      `${base.reason}; nobody was asked: ${clip(answer.unasked)}`,
    );
  const why = answer.reason === undefined || answer.reason === '' ? '' : `: ${clip(answer.reason)}`;
  return deny(
    base,
    { stage: 'handler', by: 'handler', layer: null },
    `${base.reason}; the approver denied the call${why}`,
  );
}

async function fromHandler(
  ask: Extract<Precheck, { kind: 'ask' }>,
  env: GateEnvironment,
  handler: PermissionHandler,
  asked: 'policy' | 'registry',
): Promise<Resolution> {
  const outcome = await callHandler(handler, ask.request, env.handlerTimeoutMs);
  const base: DecisionBase = { ...ask.base, asked };
  if (outcome.failure !== undefined) return { kind: 'decided', decision: handlerFailure(base, outcome), answer: null };
  const answer: Answer = { effect: outcome.value === 'allow' ? 'allow' : 'deny' };
  return { kind: 'decided', decision: fromAnswer(base, answer), answer };
}

function handlerFailure(
  base: DecisionBase,
  outcome: { readonly failure: 'threw' | 'timeout' | 'invalid'; readonly detail: string },
): Decision {
  const by =
    outcome.failure === 'timeout'
      ? 'handler_timeout'
      : outcome.failure === 'threw'
        ? 'handler_error'
        : 'handler_invalid';
  return deny(base, { stage: 'handler', by, layer: null }, `${base.reason}; ${outcome.detail}, so the call is denied`);
}

const MAX_REASON = 500;

function clip(text: string): string {
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON - 3)}...` : text;
}
