/**
 * Approvals in the protocol's own form for 2026-07-28 clients (multi round-trip requests). An `ask` on a
 * 2026-07-28 request answers `input_required`: a form elicitation ("Allow the tool call …?") where the
 * client declares form elicitation, and a `requestState` that is the one approval model's binding of this
 * very call (gate/approval.ts: `bindingOf`, its id `requestIdOf`, a MAC under the gateway's secret), never a
 * grant by itself. The retry carries the state and the person's answer; it runs only when
 *
 * - the state is one the gateway minted (its id is the MAC of its binding under the gateway's secret: an
 *   edited state fails),
 * - it binds the call of the retry (`sameBinding`: the same principal, tenant, tool, arguments digest, rule,
 *   policy version, pin — a state moved to another principal or call fails),
 * - it has not expired, and
 * - its nonce is consumed now (the NonceStore: true once, across every replica sharing it — a replayed
 *   state and answer fail).
 *
 * Anything else refuses the call with the reason; a retry without a state asks anew. A state from another
 * gateway process verifies only when they share the secret (`approvals`), and is single use across them only
 * when they share the nonces.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import {
  bindingOf,
  consumeNonce,
  requestIdOf,
  sameBinding,
  type ApprovalBinding,
  type ApprovalKind,
} from '../gate/index.js';
import { canonical } from '../names.js';
import type { PermissionRequest } from '../permissions/handler.js';
import type { NonceStore } from '../stores/types.js';
import type { ApprovalNote } from './approvals.js';

/** The key of the approval in `inputRequests` / `inputResponses`. */
export const APPROVAL_INPUT = 'toolgate.approval';

/** How long a 2026-07-28 client's person has to answer (the state expires then). @default 15 minutes */
export const MRTR_TTL_MS = 900_000;

/** Who asks, as the binding holds it. */
export interface MrtrWho {
  /** The authenticated subject (issuer, claim, value) the approval belongs to, or null. */
  readonly subject: string | null;
  readonly caller: string | null;
  readonly tenant: string | null;
  readonly policyVersion: string | null;
}

/** What one 2026-07-28 request carries for its ask. */
export interface MrtrRequest {
  /** The gateway's approval key (the route owner's). */
  readonly secret: Uint8Array;
  readonly nonces: Pick<NonceStore, 'consume'>;
  /** Whether the client declared form elicitation in this request's capabilities. */
  readonly form: boolean;
  /** `ctx.mcpReq.requestState()`: the echoed state, as the client sent it (attacker-controlled). */
  readonly requestState: unknown;
  /** `ctx.mcpReq.inputResponses`. */
  readonly inputResponses: Readonly<Record<string, unknown>> | undefined;
  readonly who: MrtrWho;
  /** @default {@link MRTR_TTL_MS} */
  readonly ttlMs?: number;
}

/** The `input_required` answer of a round, once an ask made one. */
export interface MrtrInputRequired {
  readonly inputRequests: Record<string, { method: 'elicitation/create'; params: Record<string, unknown> }>;
  readonly requestState: string;
}

/** One request's rounds: the person of its ask, and what it leaves to answer. */
export interface MrtrRound {
  /** Decides an ask of this request; `note` hears what happened (the audit's `approval`). */
  ask(
    kind: ApprovalKind,
    request: PermissionRequest,
    message: string,
    note: (n: ApprovalNote) => void,
  ): Promise<'allow' | 'deny'>;
  /** The `input_required` to answer with instead of the refusal, when the ask asked. */
  readonly inputRequired: MrtrInputRequired | undefined;
  /** Why the retry was refused, when it was (the client is told, in place of the gate's generic text). */
  readonly refused: string | undefined;
}

const rounds = new WeakMap<object, MrtrRound>();

/** Registers `round` as the person of the asks of requests served by `peer` (modern.ts's per-request peer). */
export function attachRound(peer: object, round: MrtrRound): void {
  rounds.set(peer, round);
}

/** The round of a 2026-07-28 request's peer, or undefined for a 2025-era server. */
export function roundOf(peer: object): MrtrRound | undefined {
  return rounds.get(peer);
}

/** The requestState of a binding: the binding and its id (a MAC over it), as base64url JSON. */
export function encodeState(secret: Uint8Array, binding: ApprovalBinding): string {
  return Buffer.from(JSON.stringify({ v: 1, id: requestIdOf(secret, binding), binding })).toString('base64url');
}

/** The binding a state carries when the gateway minted it, else why not. */
export function decodeState(secret: Uint8Array, state: unknown): { binding: ApprovalBinding } | { problem: string } {
  if (typeof state !== 'string' || state.length === 0 || state.length > 16_384)
    return { problem: 'the requestState is not one the gateway minted' };
  let parsed: { v?: unknown; id?: unknown; binding?: unknown };
  try {
    parsed = JSON.parse(Buffer.from(state, 'base64url').toString('utf8')) as typeof parsed;
  } catch {
    return { problem: 'the requestState is malformed' };
  }
  if (parsed === null || typeof parsed !== 'object' || parsed.v !== 1 || typeof parsed.id !== 'string')
    return { problem: 'the requestState is malformed' };
  const binding = parsed.binding as ApprovalBinding;
  let expected: string;
  try {
    expected = requestIdOf(secret, binding);
  } catch {
    return { problem: 'the requestState is malformed' };
  }
  const a = Buffer.from(expected);
  const b = Buffer.from(parsed.id);
  if (a.length !== b.length || !timingSafeEqual(a, b))
    return { problem: 'the requestState was not minted by this gateway or was changed' };
  return { binding };
}

/** A new round for one 2026-07-28 request. */
export function mrtrRound(request: MrtrRequest): MrtrRound {
  const ttlMs = request.ttlMs ?? MRTR_TTL_MS;
  let inputRequired: MrtrInputRequired | undefined;
  let refused: string | undefined;
  const owner = { kind: 'session' as const, id: request.who.subject ?? request.who.caller ?? 'anonymous' };
  const bind = (kind: ApprovalKind, ask: PermissionRequest, callId: string): ApprovalBinding =>
    bindingOf(
      {
        kind,
        owner,
        callId,
        tool: kind === 'tool' ? canonical(ask.toolName) : ask.toolName,
        args: ask.parameters,
        rule: ask.ruleName ?? '(fallback)',
        policyVersion: request.who.policyVersion,
        caller: request.who.caller,
        tenant: request.who.tenant,
        ttlMs,
      },
      Date.now(),
    );
  const refuse = (reason: string, note: (n: ApprovalNote) => void, id = 'none'): 'deny' => {
    refused = `toolgate gateway: the approval was refused: ${reason}; the call did not run. Call it again without the requestState to be asked anew.`;
    note({ id, state: 'denied', reason });
    return 'deny';
  };
  return {
    get inputRequired() {
      return inputRequired;
    },
    get refused() {
      return refused;
    },
    async ask(kind, ask, message, note) {
      if (request.requestState === undefined) {
        if (!request.form) {
          note({ id: 'none', state: 'denied', reason: 'the client cannot be asked (no form elicitation declared)' });
          return 'deny';
        }
        const binding = bind(kind, ask, `mrtr-${randomUUID()}`);
        inputRequired = {
          inputRequests: {
            [APPROVAL_INPUT]: {
              method: 'elicitation/create',
              params: {
                mode: 'form',
                message,
                requestedSchema: {
                  type: 'object',
                  properties: { approve: { type: 'boolean', title: 'Allow', default: false } },
                  required: ['approve'],
                },
              },
            },
          },
          requestState: encodeState(request.secret, binding),
        };
        note({ id: requestIdOf(request.secret, binding), state: 'asked' });
        return 'deny';
      }
      const decoded = decodeState(request.secret, request.requestState);
      if ('problem' in decoded) return refuse(decoded.problem, note);
      const given = decoded.binding;
      const id = requestIdOf(request.secret, given);
      const mismatch = sameBinding(given, bind(kind, ask, given.callId));
      if (mismatch !== null) return refuse(mismatch, note, id);
      if (!(given.expiresAt > Date.now())) return refuse('the requestState has expired', note, id);
      const answer = request.inputResponses?.[APPROVAL_INPUT] as
        { action?: unknown; content?: Record<string, unknown> } | undefined;
      if (answer === undefined || typeof answer !== 'object' || answer === null)
        return refuse('the retry carries no answer to the approval', note, id);
      // Single use, across every replica sharing the nonces: consumed before anything runs, whatever the answer.
      if (!(await consumeNonce(request.nonces, given.nonce, ttlMs * 2)))
        return refuse('this requestState was used already', note, id);
      if (answer.action === 'accept' && answer.content?.['approve'] === true) {
        note({ id, state: 'approved' });
        return 'allow';
      }
      note({ id, state: 'denied', reason: 'the person did not allow it' });
      return 'deny';
    },
  };
}
