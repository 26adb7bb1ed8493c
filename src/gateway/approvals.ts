/**
 * Approvals that wait for a person in the shared stores (`toolgate/postgres`, `toolgate/sqlite`, …), so a
 * gateway of several stateless replicas can ask on one replica and run on another, exactly once:
 *
 * 1. a call a rule asks for is refused for now (worded as waiting), and the request the gate bound to the
 *    exact call (kind, the caller's subject, the route's agent, tool, SHA-256 of the validated arguments,
 *    rule, policy version, pin, expiry, a single-use nonce) is put in the ApprovalStore; the refusal names
 *    its id;
 * 2. a person answers it on any replica (`POST /approvals/<id>`, the inbox, or `ApprovalStore.answer`);
 *    the store keeps the first answer only;
 * 3. the client asks again (any replica): the answered request for that exact call is found, its nonce is
 *    consumed (NonceStore: true once, across every worker), and only then the call runs. A second retry
 *    finds the nonce used and asks anew.
 *
 * Any store error refuses the call (fail closed).
 */
import type { ApprovalRequest, AskOutcome } from '../contracts/approval.js';
import { describe } from '../names.js';
import { secretOf } from '../crypto.js';
import { consumeNonce, requestIdOf, sameBinding } from '../gate/index.js';
import type { ApprovalStore, NonceStore, PendingRecord } from '../stores/types.js';

/** Options of the gateway's store-backed approvals. */
export interface GatewayApprovals {
  /** Where pending requests and answers live (shared by every replica). */
  readonly store: ApprovalStore;
  /** Single-use nonces (shared by every replica). */
  readonly nonces: NonceStore;
  /** The HMAC key approval ids are made with (the same on every replica). */
  readonly secret: string | Uint8Array;
  /** How long a request waits for an answer. @default 900_000 (15 minutes) */
  readonly ttlMs?: number;
}

/** What the store approver did for one call (the gateway words its refusal and audit from it). */
export interface ApprovalNote {
  readonly id: string;
  readonly state: 'asked' | 'pending' | 'approved' | 'denied';
  readonly reason?: string;
  /** Who answered (the inbox's approver). */
  readonly approver?: string;
}

/** Checks the options; throws a TypeError naming what is wrong. */
export function checkApprovals(approvals: GatewayApprovals): { secret: Uint8Array; ttlMs: number } {
  if (typeof approvals !== 'object' || approvals === null)
    throw new TypeError(`option "approvals" must be an object, got ${describe(approvals)}`);
  for (const [key, method] of [
    ['store', 'put'],
    ['nonces', 'consume'],
  ] as const)
    if (typeof (approvals[key] as unknown as Record<string, unknown> | undefined)?.[method] !== 'function')
      throw new TypeError(
        `option "approvals.${key}" must be a store with ${method}(), got ${describe(approvals[key])}`,
      );
  const secret = secretOf(approvals.secret, 'option "approvals.secret"');
  const ttlMs = approvals.ttlMs ?? 900_000;
  if (!Number.isInteger(ttlMs) || ttlMs <= 0)
    throw new TypeError(`option "approvals.ttlMs" must be a positive integer, got ${describe(ttlMs)}`);
  return { secret, ttlMs };
}

/**
 * The gateway's person when approvals live in the stores: given the request the gate bound to this call
 * (under the stores' secret, owned by the caller's subject), it answers with the first answer a person gave
 * to the same call made earlier — same kind, owner, agent, tool, arguments, rule, policy version, pin,
 * caller and tenant (THE `sameBinding`, the call id aside: a retry is a new call) — once its nonce is
 * consumed here, so it counts on one replica once; otherwise it puts the request in the store (unless one
 * waits already) and answers a deny that `waiting` words as waiting, not as an approver's no. `note` hears
 * what happened. `shown.agent` is the route's agent (`/mcp/<agent>`): a request bound to any other agent is
 * refused (a throw: the call is denied), so a stored approval is always the route's own agent's.
 */
export function storePerson(
  approvals: GatewayApprovals,
  shown: { readonly agent: string | null },
  note: (n: ApprovalNote) => void,
): { ask(request: ApprovalRequest): Promise<AskOutcome> } {
  const { secret, ttlMs } = checkApprovals(approvals);
  return {
    async ask(request) {
      const want = request.binding;
      if (want.agent !== shown.agent)
        throw new Error(
          `the approval request is bound to the agent ${describe(want.agent)}, not to this route's agent ${describe(shown.agent)}; refused`,
        );
      // Minted by a replica (its id is the MAC of its binding under the shared key), and for this very call.
      const same = (r: PendingRecord): boolean =>
        r.source === 'gateway' &&
        r.id === requestIdOf(secret, r.binding) &&
        sameBinding({ ...r.binding, callId: want.callId }, want) === null;
      const now = Date.now();
      const candidates = (await approvals.store.list(want.tenant !== null ? { tenant: want.tenant } : {}))
        .filter(same)
        .sort((a, b) => b.createdAt - a.createdAt);
      for (const record of candidates) {
        if (record.status === 'pending') {
          note({ id: record.id, state: 'pending' });
          return { effect: 'deny', waiting: waitsAt(record.id) };
        }
        if (record.status !== 'answered' || !record.answer || record.binding.expiresAt <= now) continue;
        // Single use, across every replica: only the one that consumes the nonce acts on the answer.
        // Only `true` is fresh; any other answer of the store throws (a store error: the call is refused).
        if (!(await consumeNonce(approvals.nonces, record.binding.nonce, ttlMs * 2))) continue;
        const answer = record.answer;
        const approver = answer.approver !== undefined ? { approver: answer.approver } : {};
        if (answer.effect === 'allow' && answer.arguments !== undefined) {
          // A retry carries the client's own arguments: an approval of edited ones cannot apply to it.
          const reason = `the approver allowed the call only with edited arguments ${JSON.stringify(answer.arguments)}; call again with those`;
          note({ id: record.id, state: 'denied', reason, ...approver });
          return { effect: 'deny', reason, ...approver };
        }
        if (answer.effect === 'allow') {
          note({ id: record.id, state: 'approved', ...approver });
          return { effect: 'allow', ...approver };
        }
        const reason = answer.reason !== undefined && answer.reason !== '' ? { reason: answer.reason } : {};
        note({ id: record.id, state: 'denied', ...reason, ...approver });
        return { effect: 'deny', ...reason, ...approver };
      }
      await approvals.store.put({
        ...request,
        agent: shown.agent ?? request.agent,
        source: 'gateway',
        createdAt: now,
        expiresAt: want.expiresAt,
        status: 'pending',
        answer: null,
        answeredAt: null,
      });
      note({ id: request.id, state: 'asked' });
      return { effect: 'deny', waiting: waitsAt(request.id) };
    },
  };
}

function waitsAt(id: string): string {
  return `in the shared approval store as request ${id} (answered at /approvals/${id} or in the inbox)`;
}
