/**
 * Approvals that wait for a person in the shared stores (`toolgate/postgres`, `toolgate/sqlite`, …), so a
 * gateway of several stateless replicas can ask on one replica and run on another, exactly once:
 *
 * 1. a call a rule asks for is refused for now, and a pending request bound to the exact call (caller,
 *    canonical tool, SHA-256 of the validated arguments, policy version, expiry, a single-use nonce) is
 *    put in the ApprovalStore; the refusal names its id;
 * 2. a person answers it on any replica (`POST /approvals/<id>`, the inbox, or `ApprovalStore.answer`);
 *    the store keeps the first answer only;
 * 3. the client asks again (any replica): the answered request for that exact call is found, its nonce is
 *    consumed (NonceStore: true once, across every worker), and only then the call runs. A second retry
 *    finds the nonce used and asks anew.
 *
 * Any store error refuses the call (fail closed).
 */
import { randomUUID } from 'node:crypto';
import type { PermissionHandler } from '../permissions/handler.js';
import { canonical, describe } from '../names.js';
import { hashOf, secretOf } from '../crypto.js';
import { bindingOf, requestIdOf } from '../gate/index.js';
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

/** Who asks, as the approver binds it. */
export interface ApprovalAsker {
  readonly caller: string | null;
  /**
   * The authenticated subject (issuer, claim and value, as sessions are bound: `sub: alice` and
   * `client_id: alice` are two subjects), or null without authentication. An approval is bound to it.
   */
  readonly subject?: string | null;
  readonly agent: string;
  readonly tenant: string | null;
  readonly policyVersion: string | null;
}

/**
 * The handler of a gateway ask when approvals live in the stores: answers `allow` only for a call whose
 * exact request a person allowed and whose nonce this replica consumed; otherwise `deny`, after putting a
 * new pending request when none waits. `note` receives what happened.
 */
export function storeApprover(
  approvals: GatewayApprovals,
  asker: ApprovalAsker,
  note: (n: ApprovalNote) => void,
): PermissionHandler {
  const { secret, ttlMs } = checkApprovals(approvals);
  return async (request) => {
    const tool = canonical(request.toolName);
    const argsHash = hashOf(request.parameters);
    const scope = { kind: 'session' as const, id: asker.subject ?? asker.caller ?? 'anonymous' };
    const same = (r: PendingRecord): boolean =>
      r.source === 'gateway' &&
      r.binding.owner.kind === scope.kind &&
      r.binding.owner.id === scope.id &&
      r.binding.tool === tool &&
      r.binding.argsHash === argsHash &&
      r.binding.policyVersion === asker.policyVersion &&
      // The rule the person was shown: under another (a drifted definition's), the answer is not this call's.
      r.rule === request.ruleName;
    const now = Date.now();
    const candidates = (await approvals.store.list({ ...(asker.tenant ? { tenant: asker.tenant } : {}) }))
      .filter(same)
      .sort((a, b) => b.createdAt - a.createdAt);
    for (const record of candidates) {
      if (record.status === 'pending') {
        note({ id: record.id, state: 'pending' });
        return 'deny';
      }
      if (record.status !== 'answered' || !record.answer || record.binding.expiresAt <= now) continue;
      // Single use, across every replica: only the one that consumes the nonce acts on the answer.
      if (!(await approvals.nonces.consume(record.binding.nonce, ttlMs * 2))) continue;
      if (record.answer.effect === 'allow' && record.answer.arguments !== undefined) {
        // A retry carries the client's own arguments: an approval of edited ones cannot apply to it.
        const reason = `the approver allowed the call only with edited arguments ${JSON.stringify(record.answer.arguments)}; call again with those`;
        note({ id: record.id, state: 'denied', reason });
        return 'deny';
      }
      if (record.answer.effect === 'allow') {
        note({ id: record.id, state: 'approved' });
        return 'allow';
      }
      note({ id: record.id, state: 'denied', ...(record.answer.reason ? { reason: record.answer.reason } : {}) });
      return 'deny';
    }
    const binding = bindingOf(
      {
        owner: scope,
        callId: `gateway-${randomUUID()}`,
        tool,
        args: request.parameters,
        rule: request.ruleName,
        policyVersion: asker.policyVersion,
        caller: asker.caller,
        tenant: asker.tenant,
        ttlMs,
      },
      now,
    );
    const id = requestIdOf(secret, binding);
    await approvals.store.put({
      id,
      kind: 'tool',
      binding,
      toolName: request.toolName,
      canonical: tool,
      parameters: request.parameters,
      agent: asker.agent,
      tenant: asker.tenant,
      caller: asker.caller,
      runId: null,
      rule: request.ruleName,
      reason: request.reason,
      source: 'gateway',
      createdAt: now,
      expiresAt: binding.expiresAt,
      status: 'pending',
      answer: null,
      answeredAt: null,
    });
    note({ id, state: 'asked' });
    return 'deny';
  };
}
