/**
 * The approval model's binding and proof (its types are src/contracts/approval.ts): how a binding and a
 * request id are minted, the one `sameBinding`, the one sign/verify of an answer and the one strict reader
 * of an Answer. An approval that does not verify (its MAC, its expiry, a nonce already used, or a binding
 * that names another owner, agent, call, tool, arguments, rule, policy version, pin, caller or tenant) is
 * `{ effect: 'invalid', reason }`, the reason naming what failed.
 *
 * A route with a person binds its requests under the secret its OWNER sets (`ApprovalSettings.secret`):
 * never a key of this process, so an id minted on one worker verifies on another. approval.ts is the
 * model's entry (it re-exports these beside the precedence); import from there.
 */
import { randomUUID } from 'node:crypto';
import type {
  Answer,
  ApprovalBinding,
  ApprovalInvalid,
  ApprovalKind,
  ApprovalOwner,
  ApprovalRequest,
  ApprovalSettings,
  SignedAnswer,
} from '../contracts/approval.js';
import type { GateContext } from '../contracts/gate.js';
import type { NonceStore } from '../contracts/stores.js';
import { hashOf, macOf, MIN_SECRET_BYTES, sameMac } from '../crypto.js';
import type { DecisionBase } from '../decision.js';
import { parseJsonText } from '../json-text.js';
import { describe } from '../names.js';
import { boundAgentOf, type Precheck } from './precheck.js';

const DAY = 86_400_000;

/** What a binding is minted from: the call as the gate decided it, and whom the approval belongs to. */
export interface BindingParts {
  /** @default 'tool' */
  readonly kind?: ApprovalKind;
  readonly owner: ApprovalOwner;
  /** The agent that made the call (the context's, the gateway route's); null for a call naming none, or a reload. */
  readonly agent: string | null;
  readonly callId: string;
  /** The canonical tool name (for `resource` the normalised URI, for `prompt` the canonical prompt name). */
  readonly tool: string;
  /** The validated, frozen snapshot of the arguments: the binding holds its hash. */
  readonly args: unknown;
  /** The rule that asked (`(fallback)` for the policy's fallback). */
  readonly rule: string;
  readonly policyVersion: string | null;
  /** @default null */
  readonly pin?: string | null;
  readonly caller: string | null;
  readonly tenant: string | null;
  /** How long the request can be answered. @default 86_400_000 (24 h) */
  readonly ttlMs?: number;
}

/** What a person is shown beside the binding. */
export interface RequestShown {
  readonly toolName: string;
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly agent: string;
  readonly runId: string | null;
  readonly reason: string;
  readonly trace?: unknown;
}

/** THE way a binding is minted (every route: the gate's ask, the runner, the gateway's stores, the inbox). */
export function bindingOf(parts: BindingParts, now = Date.now()): ApprovalBinding {
  return Object.freeze({
    kind: parts.kind ?? 'tool',
    owner: Object.freeze({ kind: parts.owner.kind, id: parts.owner.id }),
    agent: parts.agent,
    callId: parts.callId,
    tool: parts.tool,
    argsHash: hashOf(parts.args),
    rule: parts.rule,
    policyVersion: parts.policyVersion,
    pin: parts.pin ?? null,
    caller: parts.caller,
    tenant: parts.tenant,
    expiresAt: now + (parts.ttlMs ?? DAY),
    nonce: randomUUID(),
  });
}

/** THE way a request id is minted: a MAC over the binding under the route owner's secret. */
export function requestIdOf(secret: Uint8Array, binding: ApprovalBinding): string {
  return macOf(secret, ['toolgate.approval-request', binding]);
}

/** A request for `binding`, its id minted under `secret`. */
export function requestOf(secret: Uint8Array, binding: ApprovalBinding, shown: RequestShown): ApprovalRequest {
  return Object.freeze({
    id: requestIdOf(secret, binding),
    binding,
    kind: binding.kind,
    toolName: shown.toolName,
    canonical: binding.tool,
    parameters: shown.parameters,
    agent: shown.agent,
    tenant: binding.tenant,
    caller: binding.caller,
    runId: shown.runId,
    rule: binding.rule,
    reason: shown.reason,
    ...(shown.trace === undefined ? {} : { trace: shown.trace }),
  });
}

/** The fields of a Decision (or of an ask's base) a call's binding is made of. */
type BoundCall = Pick<DecisionBase, 'callId' | 'canonical' | 'tenant' | 'runId' | 'policyVersion' | 'rule'>;

/**
 * The binding of a call of this dispatch: the gate's ask, or a call decided earlier whose answer is checked
 * again (no id: the registry's route binds to compare, never to ask).
 */
export function callBinding(
  call: BoundCall,
  args: Readonly<Record<string, unknown>>,
  context: GateContext,
  settings: Omit<ApprovalSettings, 'secret'> | undefined,
  now = Date.now(),
): ApprovalBinding {
  return bindingOf(
    {
      kind: settings?.kind ?? 'tool',
      owner: settings?.owner ?? defaultOwner(context, call),
      // The agent the context names, or null (none named: shown as `agent`, never bound as a declared one).
      agent: boundAgentOf(context),
      callId: call.callId,
      tool: settings?.target ?? call.canonical,
      args,
      rule: call.rule ?? '(fallback)',
      policyVersion: call.policyVersion,
      pin: settings?.pin ?? null,
      caller: callerOf(context),
      tenant: call.tenant,
      ...(settings?.ttlMs === undefined ? {} : { ttlMs: settings.ttlMs }),
    },
    now,
  );
}

/** The request a route's person is shown for an ask, bound to this call under the route owner's secret. */
export function approvalRequest(
  ask: Extract<Precheck, { kind: 'ask' }>,
  context: GateContext,
  settings: ApprovalSettings | undefined,
  now = Date.now(),
): ApprovalRequest {
  return requestOf(settingsSecret(settings), callBinding(ask.base, ask.args, context, settings, now), {
    toolName: ask.tool.name,
    parameters: ask.args,
    agent: ask.base.agent,
    runId: ask.base.runId,
    reason: ask.request.reason,
  });
}

/**
 * The secret of a route with a person, checked: set by the route's owner, at least 16 bytes. A route with a
 * person and no secret is a programming error (a TypeError naming the option), never a key of this process.
 */
export function settingsSecret(settings: ApprovalSettings | undefined): Uint8Array {
  const secret = (settings as { secret?: unknown } | undefined)?.secret;
  if (!(secret instanceof Uint8Array) || secret.length < MIN_SECRET_BYTES)
    throw new TypeError(
      `a route with a person needs option "approvals.secret" (bytes, at least ${MIN_SECRET_BYTES}), set by the route's owner; got ${secret instanceof Uint8Array ? `${secret.length} bytes` : secret === undefined ? 'none' : typeof secret}`,
    );
  return secret;
}

function defaultOwner(context: GateContext, base: BoundCall): ApprovalOwner {
  if (base.runId !== null) return { kind: 'run', id: base.runId };
  return { kind: 'session', id: JSON.stringify([base.tenant, callerOf(context)]) };
}

function callerOf(context: GateContext): string | null {
  const id = context.caller?.id;
  return typeof id === 'string' ? id : null;
}

/**
 * THE comparison of two bindings: null when `given` binds the very call `want` binds (kind, owner, agent,
 * call, tool, arguments, rule, policy version, pin, caller, tenant), else the reason it does not, worded for
 * the person and the model. Expiry and the nonce are not compared here: {@link verifyAnswer} checks them.
 * A `given` without an `agent` (stored before the agent was bound) matches no call: fail closed.
 *
 * @example
 * const problem = sameBinding(stored.binding, request.binding);
 * if (problem !== null) return { effect: 'invalid', reason: problem };
 */
export function sameBinding(given: unknown, want: ApprovalBinding): string | null {
  if (typeof given !== 'object' || given === null) return 'the approval is not bound to a call';
  const b = given as Partial<Record<keyof ApprovalBinding, unknown>>;
  if ((b.kind ?? 'tool') !== want.kind) return `the approval was given for a ${String(b.kind)} request`;
  const owner = b.owner as Partial<ApprovalOwner> | null | undefined;
  if (typeof owner !== 'object' || owner === null || owner.kind !== want.owner.kind || owner.id !== want.owner.id)
    return 'the approval was given for another run or session';
  if (b.agent === undefined)
    return 'the approval was asked before approvals were bound to their agent; it counts for no call: ask again';
  if (b.agent !== want.agent)
    return `the approval was given for ${agentText(b.agent)} and ${agentText(want.agent)} asks now`;
  if (b.callId !== want.callId) return 'the approval was given for another call';
  if (b.tool !== want.tool) return 'the approval was given for another tool';
  if (b.argsHash !== want.argsHash) return 'the approval was given for other arguments';
  if (b.rule !== want.rule)
    return `the approval was given under rule ${describe(b.rule)} and rule ${JSON.stringify(want.rule)} asks now`;
  if (b.policyVersion !== want.policyVersion)
    return `the approval was given under policy version ${JSON.stringify(b.policyVersion)} and ${JSON.stringify(want.policyVersion)} is in force`;
  if ((b.pin ?? null) !== want.pin)
    return 'the approval was given for another definition of the tool (its pin changed)';
  if ((b.caller ?? null) !== want.caller) return 'the approval was given for another caller';
  if ((b.tenant ?? null) !== want.tenant) return 'the approval was given for another tenant';
  return null;
}

function agentText(agent: unknown): string {
  return agent === null ? 'no agent' : `agent ${describe(agent)}`;
}

/** Signs `answer` for `request` under `secret` (the route owner's approval key). */
export function signAnswer(secret: Uint8Array, request: ApprovalRequest, answer: Answer): SignedAnswer {
  const checked = readAnswer(answer);
  if ('invalid' in checked) throw new TypeError(`signAnswer(): ${checked.invalid}`);
  // JSON drops `settle` (a function): what is signed is the plain answer (edited arguments' keys as written).
  const plain = parseJsonText(JSON.stringify(checked)) as Answer;
  return Object.freeze({
    requestId: request.id,
    binding: request.binding,
    answer: plain,
    mac: macOf(secret, ['toolgate.answer', request.id, request.binding, plain]),
  });
}

/**
 * Uses up a single-use nonce: true when the store answers exactly `true` (fresh: this caller is the one that
 * acts), false when it answers `false` (used before). Any other answer (`'OK'`, `1`, `null`, an object) is a
 * store error and throws a TypeError naming it, as a store that rejects does: the caller refuses (fail
 * closed), never treats it as fresh. Every route that consumes a nonce goes through here.
 */
export async function consumeNonce(
  nonces: Pick<NonceStore, 'consume'>,
  nonce: string,
  ttlMs: number,
): Promise<boolean> {
  const fresh: unknown = await nonces.consume(nonce, ttlMs);
  if (fresh === true || fresh === false) return fresh;
  throw new TypeError(
    `the nonce store's consume() answered ${describe(fresh)}; only true (fresh) or false (used) is an answer`,
  );
}

/**
 * Checks a signed answer against the request the gate built for the call now: its MAC and its request id
 * under `secret`, that it binds this very call ({@link sameBinding}), that it has not expired, and consumes
 * its nonce (last: a refused answer uses nothing up). The answer, or the one way an approval fails:
 * `{ effect: 'invalid', reason }`.
 */
export async function verifyAnswer(
  secret: Uint8Array,
  signed: unknown,
  request: ApprovalRequest,
  nonces: Pick<NonceStore, 'consume'>,
  now = Date.now(),
): Promise<Answer | ApprovalInvalid> {
  const invalid = (reason: string): ApprovalInvalid => ({ effect: 'invalid', reason });
  if (typeof signed !== 'object' || signed === null) return invalid('the approval is not a signed answer');
  const { requestId: id, binding, answer, mac } = signed as Partial<SignedAnswer>;
  if (typeof id !== 'string' || typeof binding !== 'object' || binding === null || typeof mac !== 'string')
    return invalid('the approval is not a signed answer');
  let expected: string;
  let expectedId: string;
  try {
    expected = macOf(secret, ['toolgate.answer', id, binding, answer]);
    expectedId = requestIdOf(secret, binding);
  } catch {
    return invalid('the approval is not plain JSON');
  }
  if (!sameMac(mac, expected) || !sameMac(id, expectedId))
    return invalid('the approval is not signed by this gate or was altered');
  const checked = readAnswer(answer);
  if ('invalid' in checked) return invalid(checked.invalid);
  const problem = sameBinding(binding, request.binding);
  if (problem !== null) return invalid(problem);
  if (typeof binding.expiresAt !== 'number' || !(binding.expiresAt > now))
    return invalid(`the approval expired at ${new Date(Number(binding.expiresAt) || 0).toISOString()}`);
  if (typeof binding.nonce !== 'string' || !(await consumeNonce(nonces, binding.nonce, binding.expiresAt - now + 1)))
    return invalid('the approval was already used');
  return checked;
}

const SCOPES: readonly string[] = ['once', 'run', 'session'];

/** Reads an Answer given by a route or a person, strictly: anything else is a reason it is not one. */
export function readAnswer(value: unknown): Answer | { readonly invalid: string } {
  if (typeof value !== 'object' || value === null)
    return { invalid: `the answer is ${describe(value)}, not an Answer` };
  const {
    effect,
    remember,
    arguments: edited,
    reason,
    approver,
    recalled,
    settle,
    waiting,
  } = value as Record<string, unknown>;
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
  if (settle !== undefined && typeof settle !== 'function')
    return { invalid: `the answer's settle is ${describe(settle)}; expected a function` };
  if (waiting !== undefined && (typeof waiting !== 'string' || effect !== 'deny'))
    return { invalid: `the answer's waiting is ${describe(waiting)}; expected a string, on a deny` };
  return value as Answer;
}
