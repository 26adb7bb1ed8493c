/**
 * Approvals in the protocol's own form for 2026-07-28 clients (multi round-trip requests). An `ask` on a
 * 2026-07-28 request answers `input_required`: a form elicitation ("Allow the tool call …?") where the
 * client declares form elicitation, and a `requestState` that is the one approval model's binding of this
 * very call (gate/approval.ts: `bindingOf`, its id `requestIdOf`, a MAC under the gateway owner's secret),
 * never a grant by itself. The retry carries the state and the person's answer; it runs only when
 *
 * - the state is one a replica minted (its id is the MAC of its binding under the owner's secret: an
 *   edited state fails; every replica given the same secret verifies it),
 * - it binds the call of the retry (`sameBinding`: the same principal, agent, tenant, tool, arguments digest,
 *   rule, policy version — a state moved to another principal, agent (route), tenant or call fails),
 * - it has not expired,
 * - the retry answers this request (its `inputResponses` hold the approval's key), and
 * - the call is claimed now: the ledger's reservation of the state's nonce (held by one replica, once) and
 *   the nonce consumed (the NonceStore, true once) — a replayed state fails on every replica sharing them.
 *
 * Anything else is a protocol error naming why (-32602; the audit's approval says it too) and nothing
 * runs; a retry without a state asks anew. The ledger records what the call answered, so a state whose
 * call ran reads as used on every replica; a replica that dies between claim and record leaves the row
 * `unknown`, never run again. Without the owner's secret (`createGateway({ requestState })`, the CLI's
 * TOOLGATE_APPROVAL_SECRET) no state is minted: an ask is refused, never signed by a key of this process.
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import {
  bindingOf,
  consumeNonce,
  requestIdOf,
  requestOf,
  sameBinding,
  type ApprovalBinding,
  type ApprovalKind,
  type ApprovalRequest,
} from '../gate/index.js';
import type { Answer } from '../contracts/approval.js';
import { canonical } from '../names.js';
import type { PermissionRequest } from '../permissions/handler.js';
import { parseJsonText } from '../json-text.js';
import type { Ledger, LedgerOutcome, NonceStore, PendingRecord } from '../stores/types.js';
import type { ApprovalNote } from './approvals.js';

/** The key of the approval in `inputRequests` / `inputResponses`. */
export const APPROVAL_INPUT = 'toolgate.approval';

/** The form a person is asked to approve by (form elicitation, both eras): one boolean, "Allow". */
export const APPROVAL_FORM = {
  type: 'object' as const,
  properties: { approve: { type: 'boolean' as const, title: 'Allow', default: false } },
  required: ['approve'],
};

/** How long a 2026-07-28 client's person has to answer (the state expires then). @default 15 minutes */
export const MRTR_TTL_MS = 900_000;

/** Who asks, as the binding holds it. */
export interface MrtrWho {
  /** The authenticated subject (issuer, claim, value) the approval belongs to, or null. */
  readonly subject: string | null;
  readonly caller: string | null;
  /** The agent the request's context names (its route's), or null when it names none (`boundAgentOf`). */
  readonly agent: string | null;
  readonly tenant: string | null;
  readonly policyVersion: string | null;
}

/**
 * What makes a requestState hold across replicas: the owner's secret (the same on every replica), the
 * nonces and the ledger they share, and how long a state may be answered.
 */
export interface MrtrStores {
  readonly secret: Uint8Array;
  readonly nonces: Pick<NonceStore, 'consume'>;
  readonly ledger: Pick<Ledger, 'reserve' | 'record' | 'release'>;
  /** @default {@link MRTR_TTL_MS} */
  readonly ttlMs?: number;
  /**
   * This process's boot id, when the nonces and ledger live in this process only (no durable single-use
   * store): a state minted here is bound to it, and refused after a restart (its claim is gone with the
   * process). Undefined with a durable store: a state holds across restarts and replicas.
   */
  readonly boot?: string;
}

/**
 * The approval inbox as a 2026-07-28 round uses it: the request is put there without waiting (the client
 * is sent its page by URL-mode elicitation), and the retry reads the approver's answer from the store.
 */
export interface MrtrInbox {
  submit(request: ApprovalRequest): Promise<void>;
  get(id: string): Promise<PendingRecord | undefined>;
  /** The inbox page of the request (behind the inbox's sign-in: never a pre-authenticated link). */
  link(request: ApprovalRequest): string | undefined;
}

/** What one 2026-07-28 request carries for its ask. */
export interface MrtrRequest {
  /** The owner-set secret and the shared stores; undefined: no state is minted and an ask is refused. */
  readonly stores: MrtrStores | undefined;
  /** This replica's name in the ledger (who claimed a call). */
  readonly replica: string;
  /** Whether the client declared form elicitation in this request's capabilities. */
  readonly form: boolean;
  /** Whether the client declared URL-mode elicitation. @default false */
  readonly url?: boolean;
  /**
   * Where the gateway's asks go when it has an inbox (its approvers answer, never the caller): null when
   * the inbox cannot be asked without waiting; undefined when the gateway has no inbox (the form asks).
   */
  readonly inbox?: MrtrInbox | null;
  /** `ctx.mcpReq.requestState()`: the echoed state, as the client sent it (attacker-controlled). */
  readonly requestState: unknown;
  /** `ctx.mcpReq.inputResponses`. */
  readonly inputResponses: Readonly<Record<string, unknown>> | undefined;
  readonly who: MrtrWho;
  /** How long a claimed call may take before its ledger row reads as unknown. @default 10 minutes */
  readonly leaseMs?: number;
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
    /** The hash of the whole tool definition the call is made against (pins), bound into the state. */
    pin?: string | null,
  ): Promise<'allow' | 'deny' | Answer>;
  /** The `input_required` to answer with instead of the refusal, when the ask asked. */
  readonly inputRequired: MrtrInputRequired | undefined;
  /** Why the retry was refused, when it was: the protocol error's message (nothing ran). */
  readonly refused: string | undefined;
  /**
   * Records in the ledger what the claimed call answered (call it once the handler returned; a round that
   * claimed nothing ignores it). A store error is swallowed: the row stays claimed, never run again.
   */
  settle(outcome: LedgerOutcome): Promise<void>;
}

/**
 * The members by which a 2026-07-28 request's peer (modern-peer.ts) gives its request's round, made when first
 * asked for (modern-binding.ts), and tells whether it is in one: no round is made for a call that asks nothing
 * (issue 25).
 */
export const PEER_ROUND: unique symbol = Symbol('toolgate.peerRound');
export const PEER_IN_ROUND: unique symbol = Symbol('toolgate.peerInRound');

/** The round of a 2026-07-28 request's peer (made now), or undefined for a 2025-era server (or outside a round). */
export function roundOf(peer: object): MrtrRound | undefined {
  const round = (peer as { [PEER_ROUND]?: () => MrtrRound | undefined })[PEER_ROUND];
  return typeof round === 'function' ? round.call(peer) : undefined;
}

/** Whether {@link roundOf} gives `peer` a round, without making it: false for a 2025-era server. */
export function inRound(peer: object): boolean {
  const inside = (peer as { [PEER_IN_ROUND]?: () => boolean })[PEER_IN_ROUND];
  return typeof inside === 'function' && inside.call(peer) === true;
}

/** The key of the states minted under `boot` (the owner's secret bound to it), or the secret itself. */
export function stateKeyOf(secret: Uint8Array, boot: string | undefined): Uint8Array {
  return boot === undefined ? secret : createHmac('sha256', secret).update(`toolgate.mrtr-boot\0${boot}`).digest();
}

/**
 * The requestState of a binding: the binding and its id (a MAC over it), as base64url JSON. With `boot`
 * (a process-bound round, {@link MrtrStores.boot}) the MAC is under the secret bound to that boot.
 */
export function encodeState(secret: Uint8Array, binding: ApprovalBinding, boot?: string): string {
  const id = requestIdOf(stateKeyOf(secret, boot), binding);
  return Buffer.from(JSON.stringify({ v: 1, id, binding, ...(boot === undefined ? {} : { boot }) })).toString(
    'base64url',
  );
}

/**
 * The binding a state carries when a replica minted it, else why not. `boot`: this process's boot id when
 * its claims are its own ({@link MrtrStores.boot}); a state of another boot, or of a gateway with another
 * kind of store, is refused (its claim cannot be checked here).
 */
export function decodeState(
  secret: Uint8Array,
  state: unknown,
  boot?: string,
): { binding: ApprovalBinding } | { problem: string } {
  if (typeof state !== 'string' || state.length === 0 || state.length > 16_384)
    return { problem: 'the requestState is malformed (not a string the gateway minted)' };
  let parsed: { v?: unknown; id?: unknown; binding?: unknown; boot?: unknown };
  try {
    parsed = parseJsonText(Buffer.from(state, 'base64url').toString('utf8')) as typeof parsed;
  } catch {
    return { problem: 'the requestState is malformed' };
  }
  if (
    parsed === null ||
    typeof parsed !== 'object' ||
    parsed.v !== 1 ||
    typeof parsed.id !== 'string' ||
    typeof parsed.binding !== 'object' ||
    parsed.binding === null ||
    (parsed.boot !== undefined && (typeof parsed.boot !== 'string' || parsed.boot === ''))
  )
    return { problem: 'the requestState is malformed' };
  const binding = parsed.binding as ApprovalBinding;
  if (typeof binding.nonce !== 'string' || binding.nonce === '' || typeof binding.expiresAt !== 'number')
    return { problem: 'the requestState is malformed' };
  const minted = parsed.boot as string | undefined;
  let expected: string;
  try {
    expected = requestIdOf(stateKeyOf(secret, minted), binding);
  } catch {
    return { problem: 'the requestState is malformed' };
  }
  const a = Buffer.from(expected);
  const b = Buffer.from(parsed.id);
  if (a.length !== b.length || !timingSafeEqual(a, b))
    return { problem: 'the requestState was not minted by this gateway or was changed' };
  if (minted !== boot) {
    if (boot === undefined)
      return {
        problem:
          'the requestState was issued by a gateway that claimed retries in its process only (no --state-store), so whether it ran cannot be known here; ask again',
      };
    if (minted === undefined)
      return {
        problem:
          'the requestState was issued by a gateway with a durable state store, and this one claims retries in its process only; ask again',
      };
    return { problem: 'the requestState was issued by another gateway process or before a restart; ask again' };
  }
  return { binding };
}

/** The ledger key of the call a state binds (its nonce: one per ask). */
export function ledgerKeyOf(binding: ApprovalBinding): string {
  return `toolgate.mrtr:${binding.nonce}`;
}

/** What a binding's `tool` names: the canonical tool, the resource's URI, the prompt's canonical name (as items.ts). */
function targetOf(kind: ApprovalKind, ask: PermissionRequest): string {
  if (kind === 'resource') return String(ask.parameters['uri']);
  if (kind === 'prompt') return canonical(String(ask.parameters['name']));
  return canonical(ask.toolName);
}

/** A new round for one 2026-07-28 request. */
export function mrtrRound(request: MrtrRequest): MrtrRound {
  const stores = request.stores;
  const ttlMs = stores?.ttlMs ?? MRTR_TTL_MS;
  const leaseMs = request.leaseMs ?? 600_000;
  let inputRequired: MrtrInputRequired | undefined;
  let refused: string | undefined;
  let claimed: string | undefined;
  const owner = { kind: 'session' as const, id: request.who.subject ?? request.who.caller ?? 'anonymous' };
  const bind = (kind: ApprovalKind, ask: PermissionRequest, callId: string, pin: string | null): ApprovalBinding =>
    bindingOf(
      {
        kind,
        owner,
        agent: request.who.agent,
        callId,
        tool: targetOf(kind, ask),
        args: ask.parameters,
        rule: ask.ruleName ?? '(fallback)',
        policyVersion: request.who.policyVersion,
        pin,
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
    async settle(outcome) {
      const key = claimed;
      claimed = undefined;
      if (key === undefined || !stores) return;
      await stores.ledger.record(key, request.replica, outcome).catch(() => false);
    },
    async ask(kind, ask, message, note, pin = null) {
      if (!stores)
        return refuse(
          'the gateway has no approval secret set by its owner (createGateway option "requestState", the CLI\'s TOOLGATE_APPROVAL_SECRET), so it cannot ask a 2026-07-28 client',
          note,
        );
      const { secret } = stores;
      const inbox = request.inbox;
      if (inbox === null) return refuse('the inbox cannot be asked without waiting (its submit and store)', note);
      const shown = (binding: ApprovalBinding): ApprovalRequest =>
        requestOf(secret, binding, {
          toolName: kind === 'tool' ? ask.toolName : binding.tool,
          parameters: ask.parameters,
          agent: ask.agent,
          runId: null,
          reason: ask.reason,
        });
      // The client is sent the inbox page of the request, to follow and come back; its reply decides nothing.
      const toInbox = (binding: ApprovalBinding, link: string): MrtrInputRequired => ({
        inputRequests: {
          [APPROVAL_INPUT]: {
            method: 'elicitation/create',
            params: { mode: 'url', message: `${message} An approver answers in the approval inbox.`, url: link },
          },
        },
        requestState: encodeState(secret, binding, stores.boot),
      });
      if (request.requestState === undefined) {
        if (request.inputResponses !== undefined)
          return refuse('the request carries inputResponses without the requestState they answer', note);
        if (inbox) {
          if (!request.url) {
            const reason = 'the client offers no way to be sent the approval page (no URL elicitation declared)';
            note({ id: 'none', state: 'denied', reason });
            return { effect: 'deny', unasked: reason };
          }
          const binding = bind(kind, ask, `mrtr-${randomUUID()}`, pin);
          const approval = shown(binding);
          const link = inbox.link(approval);
          if (link === undefined)
            return refuse('the inbox has no address to send the client (gatewayInbox url, --inbox-url)', note);
          try {
            await inbox.submit(approval);
          } catch (error) {
            return refuse(
              `the approval could not be put in the inbox (${error instanceof Error ? error.message : String(error)})`,
              note,
            );
          }
          inputRequired = toInbox(binding, link);
          note({ id: approval.id, state: 'asked' });
          return 'deny';
        }
        if (!request.form) {
          const reason = 'the client offers no way to ask (no form elicitation declared)';
          note({ id: 'none', state: 'denied', reason });
          return { effect: 'deny', unasked: reason };
        }
        const binding = bind(kind, ask, `mrtr-${randomUUID()}`, pin);
        inputRequired = {
          inputRequests: {
            [APPROVAL_INPUT]: {
              method: 'elicitation/create',
              params: { mode: 'form', message, requestedSchema: APPROVAL_FORM },
            },
          },
          requestState: encodeState(secret, binding, stores.boot),
        };
        note({ id: requestIdOf(secret, binding), state: 'asked' });
        return 'deny';
      }
      const decoded = decodeState(secret, request.requestState, stores.boot);
      if ('problem' in decoded) return refuse(decoded.problem, note);
      const given = decoded.binding;
      const id = requestIdOf(secret, given);
      const mismatch = sameBinding(given, bind(kind, ask, given.callId, pin));
      if (mismatch !== null) return refuse(mismatch, note, id);
      if (!(given.expiresAt > Date.now())) return refuse('the requestState has expired', note, id);
      const responses = request.inputResponses;
      const others = (r: Readonly<Record<string, unknown>>): string =>
        `the retry's inputResponses answer another request (${JSON.stringify(Object.keys(r).slice(0, 5))}, not "${APPROVAL_INPUT}")`;
      // Claimed before anything runs, whatever the answer, on every replica sharing the ledger and nonces:
      // the ledger's reservation first (one replica holds it), then the nonce. A store error refuses.
      const claim = async (): Promise<boolean> => {
        const key = ledgerKeyOf(given);
        let reservation;
        try {
          reservation = await stores.ledger.reserve(key, request.replica, leaseMs);
        } catch (error) {
          refuse(
            `the ledger could not claim the call (${error instanceof Error ? error.message : String(error)})`,
            note,
            id,
          );
          return false;
        }
        if (reservation.state !== 'reserved') {
          refuse(
            reservation.state === 'held'
              ? 'this requestState is being used by another request now'
              : 'this requestState was used already',
            note,
            id,
          );
          return false;
        }
        let fresh: boolean;
        try {
          // Only `true` is fresh; any other answer is a store error (thrown): refused like a used one.
          fresh = await consumeNonce(stores.nonces, given.nonce, ttlMs * 2);
        } catch {
          fresh = false;
        }
        if (!fresh) {
          await stores.ledger.release(key, request.replica).catch(() => false);
          refuse('this requestState was used already', note, id);
          return false;
        }
        claimed = key;
        return true;
      };
      if (inbox) {
        if (
          responses !== undefined &&
          (typeof responses !== 'object' || responses === null || !(APPROVAL_INPUT in responses))
        )
          return refuse(others(responses ?? {}), note, id);
        let record: PendingRecord | undefined;
        try {
          record = await inbox.get(id);
        } catch (error) {
          return refuse(
            `the inbox could not be read (${error instanceof Error ? error.message : String(error)})`,
            note,
            id,
          );
        }
        // Put there by a replica for this very call (its id the MAC of its binding under the shared key).
        if (
          !record ||
          record.source !== 'gateway' ||
          record.id !== requestIdOf(secret, record.binding) ||
          sameBinding(record.binding, given) !== null ||
          record.binding.nonce !== given.nonce
        )
          return refuse('the approval is not in the inbox', note, id);
        if (record.status === 'pending') {
          // Not answered yet: the same input_required again (the client may come back later).
          const link = inbox.link(record);
          if (link === undefined) return refuse('the inbox has no address to send the client', note, id);
          inputRequired = toInbox(given, link);
          note({ id, state: 'pending' });
          return 'deny';
        }
        if (!(await claim())) return 'deny';
        const answer = record.answer;
        const approver = answer?.approver !== undefined ? { approver: answer.approver } : {};
        if (record.status !== 'answered' || !answer) {
          note({ id, state: 'denied', reason: 'no approver answered in time', ...approver });
          return 'deny';
        }
        if (answer.effect === 'allow' && answer.arguments !== undefined) {
          note({
            id,
            state: 'denied',
            reason: 'the approver allowed the call only with edited arguments; call again with those',
            ...approver,
          });
          return 'deny';
        }
        if (answer.effect === 'allow') {
          note({ id, state: 'approved', ...approver });
          return 'allow';
        }
        note({ id, state: 'denied', ...(answer.reason ? { reason: answer.reason } : {}), ...approver });
        return 'deny';
      }
      if (responses === undefined || responses === null || typeof responses !== 'object')
        return refuse('the retry carries no answer to the approval', note, id);
      const answer = responses[APPROVAL_INPUT] as { action?: unknown; content?: Record<string, unknown> } | undefined;
      if (answer === undefined) return refuse(others(responses), note, id);
      if (typeof answer !== 'object' || answer === null || typeof answer.action !== 'string')
        return refuse("the retry's answer to the approval is malformed", note, id);
      if (!(await claim())) return 'deny';
      if (answer.action === 'accept' && answer.content?.['approve'] === true) {
        note({ id, state: 'approved' });
        return 'allow';
      }
      note({ id, state: 'denied', reason: 'the person did not allow it' });
      return 'deny';
    },
  };
}
