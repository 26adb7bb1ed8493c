/**
 * ONE approval model for every route: an ask is answered with an {@link Answer} (allow / deny, optionally
 * remembered, optionally with edited arguments) or left pending; an approval is bound to the exact call
 * ({@link ApprovalBinding}); and one precedence decides who answers:
 *
 *   the policy's own handler → the route's person (`route.ask`) → the registry's handler → the fallback
 *
 * An approval that does not verify (its MAC, its expiry, a nonce already used, or a binding that names
 * another run or session, call, tool, arguments or policy version) is handled one way: the call is denied
 * at stage `handler`, by `approval_invalid`, with a reason naming what failed.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Decision, DecisionBase } from '../decision.js';
import { describe } from '../names.js';
import { callHandler, type PermissionHandler } from '../permissions/handler.js';
import { hashOf, macOf, sameMac } from '../runner/signing.js';
import { allow, deny, type GateContext, type GateEnvironment, type Precheck } from './precheck.js';
import type { Route } from './route.js';

/** How long an answer is remembered: this call only, the run, or the session. */
export type RememberScope = 'once' | 'run' | 'session';

/** A person's (or an SDK's) answer to an ask. */
export interface Answer {
  readonly effect: 'allow' | 'deny';
  /** @default 'once' */
  readonly remember?: RememberScope;
  /** Edited arguments (allow only): the edited call passes the whole gate again. */
  readonly arguments?: Readonly<Record<string, unknown>>;
  /** A deny's reason, given back to the model. */
  readonly reason?: string;
  /** Who answered (audit; four eyes). */
  readonly approver?: string;
  /** The answer was remembered from an earlier approval for this run or session (the Decision's reason says so). */
  readonly recalled?: 'run' | 'session';
}

/** An approval that was presented but does not verify; `reason` names what failed. */
export interface ApprovalInvalid {
  readonly effect: 'invalid';
  readonly reason: string;
}

/** What a route's person answers: an Answer, `pending` (ask later: the route pauses), or an approval that failed verification. */
export type AskOutcome = Answer | { readonly effect: 'pending' } | ApprovalInvalid;

/** Whom an approval belongs to. The kinds never collide: the session `run:R1` is not the run `R1`. */
export interface ApprovalScope {
  readonly kind: 'run' | 'session';
  readonly id: string;
}

/** An approval is bound to the exact call. */
export interface ApprovalBinding {
  readonly scope: ApprovalScope;
  readonly callId: string;
  /** The canonical tool name. */
  readonly tool: string;
  /** SHA-256 of the canonical JSON of the validated, frozen snapshot of the arguments. */
  readonly argsHash: string;
  readonly policyVersion: string | null;
  /** Epoch milliseconds. */
  readonly expiresAt: number;
  /** Single use: consumed when an answer to this request is applied. */
  readonly nonce: string;
}

/** What a person (inbox, SDK, elicitation, runner) is shown. */
export interface ApprovalRequest {
  /** HMAC over the binding. */
  readonly id: string;
  readonly binding: ApprovalBinding;
  /** The tool's declared name, and its canonical form. */
  readonly toolName: string;
  readonly canonical: string;
  /** The frozen snapshot the call would run with. */
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly agent: string;
  readonly tenant: string | null;
  readonly caller: string | null;
  readonly runId: string | null;
  readonly rule: string;
  readonly reason: string;
  readonly trace?: unknown;
}

/** How a route binds its approvals. */
export interface ApprovalSettings {
  /** The HMAC key of request ids and signed answers. */
  readonly secret: Uint8Array;
  /** Whom approvals belong to. @default the run of the context, else the session of its tenant and caller */
  readonly scope?: ApprovalScope;
  /** How long a request can be answered. @default 86_400_000 (24 h) */
  readonly ttlMs?: number;
}

/** An answer signed for one request: what a route stores or sends and gets back before it counts. */
export interface SignedAnswer {
  readonly requestId: string;
  readonly binding: ApprovalBinding;
  readonly answer: Answer;
  readonly mac: string;
}

/** Single-use nonces (the stores' NonceStore has this shape): true the first time only. */
export interface NonceConsumer {
  consume(nonce: string, ttlMs: number): Promise<boolean>;
}

const DAY = 86_400_000;
/** The key of routes that give none: requests it signs verify in this process only. */
const PROCESS_SECRET = randomBytes(32);

/** The request a person is shown for an ask, bound to this call. */
export function approvalRequest(
  ask: Extract<Precheck, { kind: 'ask' }>,
  context: GateContext,
  settings: ApprovalSettings | undefined,
  now = Date.now(),
): ApprovalRequest {
  const base = ask.base;
  const scope: ApprovalScope = settings?.scope ?? defaultScope(context, base);
  const binding: ApprovalBinding = Object.freeze({
    scope: Object.freeze({ kind: scope.kind, id: scope.id }),
    callId: base.callId,
    tool: base.canonical,
    argsHash: hashOf(ask.args),
    policyVersion: base.policyVersion,
    expiresAt: now + (settings?.ttlMs ?? DAY),
    nonce: randomUUID(),
  });
  return Object.freeze({
    id: requestId(settings?.secret ?? PROCESS_SECRET, binding),
    binding,
    toolName: ask.tool.name,
    canonical: base.canonical,
    parameters: ask.args,
    agent: base.agent,
    tenant: base.tenant,
    caller: context.caller?.id ?? null,
    runId: base.runId,
    rule: ask.request.ruleName,
    reason: ask.request.reason,
  });
}

function defaultScope(context: GateContext, base: DecisionBase): ApprovalScope {
  if (base.runId !== null) return { kind: 'run', id: base.runId };
  return { kind: 'session', id: JSON.stringify([base.tenant, context.caller?.id ?? null]) };
}

function requestId(secret: Uint8Array, binding: ApprovalBinding): string {
  return macOf(secret, ['toolgate.approval-request', binding]);
}

/** Signs `answer` for `request` under `secret` (the route's approval key). */
export function signAnswer(secret: Uint8Array, request: ApprovalRequest, answer: Answer): SignedAnswer {
  const checked = readAnswer(answer);
  if ('invalid' in checked) throw new TypeError(`signAnswer(): ${checked.invalid}`);
  const plain = JSON.parse(JSON.stringify(checked)) as Answer;
  return Object.freeze({
    requestId: request.id,
    binding: request.binding,
    answer: plain,
    mac: macOf(secret, ['toolgate.answer', request.id, request.binding, plain]),
  });
}

/**
 * Checks a signed answer against the request the gate built for the call now: its MAC, that it binds this
 * very call (scope, call id, tool, arguments, policy version), that it has not expired, and consumes its
 * nonce. The answer, or the one way an approval fails: `{ effect: 'invalid', reason }`.
 */
export async function verifyAnswer(
  secret: Uint8Array,
  signed: unknown,
  request: ApprovalRequest,
  nonces: NonceConsumer,
  now = Date.now(),
): Promise<Answer | ApprovalInvalid> {
  const invalid = (reason: string): ApprovalInvalid => ({ effect: 'invalid', reason });
  if (typeof signed !== 'object' || signed === null) return invalid('the approval is not a signed answer');
  const { requestId: id, binding, answer, mac } = signed as Partial<SignedAnswer>;
  if (typeof id !== 'string' || typeof binding !== 'object' || binding === null || typeof mac !== 'string')
    return invalid('the approval is not a signed answer');
  let expected: string;
  try {
    expected = macOf(secret, ['toolgate.answer', id, binding, answer]);
  } catch {
    return invalid('the approval is not plain JSON');
  }
  if (!sameMac(mac, expected) || !sameMac(id, requestId(secret, binding)))
    return invalid('the approval is not signed by this gate or was altered');
  const checked = readAnswer(answer);
  if ('invalid' in checked) return invalid(checked.invalid);
  const want = request.binding;
  if (binding.scope?.kind !== want.scope.kind || binding.scope.id !== want.scope.id)
    return invalid('the approval was given for another run or session');
  if (binding.callId !== want.callId) return invalid('the approval was given for another call');
  if (binding.tool !== want.tool) return invalid('the approval was given for another tool');
  if (binding.argsHash !== want.argsHash) return invalid('the approval was given for other arguments');
  if (binding.policyVersion !== want.policyVersion)
    return invalid(
      `the approval was given under policy version ${JSON.stringify(binding.policyVersion)} and ${JSON.stringify(want.policyVersion)} is in force`,
    );
  if (typeof binding.expiresAt !== 'number' || !(binding.expiresAt > now))
    return invalid(`the approval expired at ${new Date(Number(binding.expiresAt) || 0).toISOString()}`);
  if (typeof binding.nonce !== 'string' || !(await nonces.consume(binding.nonce, binding.expiresAt - now + 1)))
    return invalid('the approval was already used');
  return checked;
}

/** An in-memory NonceConsumer (one process). */
export function memoryNonces(): NonceConsumer {
  const used = new Map<string, number>();
  return {
    consume(nonce, ttlMs) {
      const now = Date.now();
      for (const [key, until] of used) if (until <= now) used.delete(key);
      if (used.has(nonce)) return Promise.resolve(false);
      used.set(nonce, now + ttlMs);
      return Promise.resolve(true);
    },
  };
}

const SCOPES: readonly string[] = ['once', 'run', 'session'];
const MAX_REASON = 500;

/** Reads an Answer given by a route or a person, strictly: anything else is a reason it is not one. */
function readAnswer(value: unknown): Answer | { readonly invalid: string } {
  if (typeof value !== 'object' || value === null)
    return { invalid: `the answer is ${describe(value)}, not an Answer` };
  const { effect, remember, arguments: edited, reason, approver, recalled } = value as Record<string, unknown>;
  if (effect !== 'allow' && effect !== 'deny')
    return { invalid: `the answer's effect is ${describe(effect)}; expected 'allow' or 'deny'` };
  if (remember !== undefined && !SCOPES.includes(remember as string))
    return { invalid: `the answer's remember is ${describe(remember)}; expected 'once', 'run' or 'session'` };
  if (edited !== undefined && (typeof edited !== 'object' || edited === null || Array.isArray(edited)))
    return { invalid: `the answer's arguments are ${describe(edited)}; expected an object` };
  if (edited !== undefined && effect !== 'allow') return { invalid: 'only an allow can carry edited arguments' };
  if (reason !== undefined && typeof reason !== 'string')
    return { invalid: `the answer's reason is ${describe(reason)}; expected a string` };
  if (approver !== undefined && typeof approver !== 'string')
    return { invalid: `the answer's approver is ${describe(approver)}; expected a string` };
  if (recalled !== undefined && recalled !== 'run' && recalled !== 'session')
    return { invalid: `the answer's recalled is ${describe(recalled)}; expected 'run' or 'session'` };
  return value as Answer;
}

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
  if (route.ask) {
    const request = approvalRequest(ask, context, route.approvals);
    if (route.announced?.(request) === true) alreadyAnnounced();
    else announce();
    const person = route.ask.bind(route);
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
    if (answer.effect === 'allow' && answer.arguments !== undefined)
      return { kind: 'edited', arguments: answer.arguments, answer, base };
    return { kind: 'decided', decision: fromAnswer(base, answer), answer };
  }
  return null;
}

/** The Decision an Answer makes. */
export function fromAnswer(base: DecisionBase, answer: Answer): Decision {
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

function clip(text: string): string {
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON - 3)}...` : text;
}
