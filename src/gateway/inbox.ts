/**
 * The gateway's asks answered in the approval inbox (`toolgate/inbox`, `toolgate serve`): a call a rule
 * asks for is put in the inbox's store as a pending approval and the MCP request waits for a person's
 * answer. Meanwhile the client is told where to answer — by URL elicitation when it declares it, else by
 * a progress notification when it sent a progress token. The call runs once on `allow` (edited arguments
 * pass the whole gate again), never on `deny`, a time-out, a cancelled request or any error.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Answer, ApprovalRequest, ApprovalSettings, AskOutcome, Route } from '../gate/index.js';
import type { PendingRecord } from '../stores/types.js';
import { describe, displaySafe } from '../names.js';
import type { ApprovalNote } from './approvals.js';

/** The approval inbox, as the gateway uses it (an `Inbox` of `toolgate/inbox` fits: see {@link gatewayInbox}). */
export interface GatewayInbox {
  /** Stores the request and resolves with the person's answer; a deny when it times out (`Inbox.ask('gateway')`). */
  readonly ask: (request: ApprovalRequest) => Promise<Answer>;
  /** Where a person answers this request (told to the client). @default not told */
  readonly link?: (request: ApprovalRequest) => string;
  /**
   * Puts the request in the inbox without waiting: a 2026-07-28 client is sent its page (URL-mode
   * elicitation) and comes back; the retry reads the answer with {@link GatewayInbox.get}. Both given, or
   * a 2026-07-28 client's ask is refused. @default none
   */
  readonly submit?: (request: ApprovalRequest) => Promise<void>;
  /** The stored record of a request (the inbox's store), for a 2026-07-28 retry. @default none */
  readonly get?: (id: string) => Promise<PendingRecord | undefined>;
}

/** What the route needs of the one MCP request it serves. */
export interface InboxCall {
  readonly server: Server;
  readonly signal: AbortSignal;
  readonly progressToken: string | number | undefined;
  readonly sendProgress: (message: string) => Promise<void>;
}

/**
 * The inbox of `toolgate/inbox` as a {@link GatewayInbox}: asks with source `gateway`, links to the inbox
 * page at `url` (the address approvers open, e.g. `toolgate serve`'s).
 *
 * @example
 * const inbox = createInbox({ secret, store: stores.approvals, nonces: stores.nonces });
 * const gateway = await createGateway({ policy, upstreams, inbox: gatewayInbox(inbox, 'https://ops.example/approvals') });
 */
export function gatewayInbox(
  inbox: {
    ask(source: 'gateway'): (request: ApprovalRequest) => Promise<Answer>;
    submit?(
      approval: ApprovalRequest & { source: 'gateway'; expiresAt: number },
      onAnswer: () => void,
    ): Promise<unknown>;
    readonly store?: { get(id: string): Promise<PendingRecord | undefined> };
  },
  url?: string,
): GatewayInbox {
  if (typeof inbox?.ask !== 'function')
    throw new TypeError(`gatewayInbox expects an inbox with ask(), got ${describe(inbox)}`);
  const ask = inbox.ask('gateway');
  const base = url?.replace(/\/+$/, '');
  const store = inbox.store;
  const submit = inbox.submit?.bind(inbox);
  return {
    ask,
    ...(base ? { link: (request) => `${base}/#a-${encodeURIComponent(request.id)}` } : {}),
    // A 2026-07-28 round's: nothing waits in this process (the retry reads the store).
    ...(submit && store
      ? {
          submit: async (request) => {
            await submit({ ...request, source: 'gateway', expiresAt: request.binding.expiresAt }, () => undefined);
          },
          get: (id) => store.get(id),
        }
      : {}),
  };
}

export function checkInbox(inbox: GatewayInbox): void {
  if (typeof inbox !== 'object' || inbox === null || typeof inbox.ask !== 'function')
    throw new TypeError(`option "inbox" must be an object with ask(request), got ${describe(inbox)}`);
  for (const key of ['link', 'submit', 'get'] as const)
    if (inbox[key] !== undefined && typeof inbox[key] !== 'function')
      throw new TypeError(`option "inbox.${key}" must be a function, got ${describe(inbox[key])}`);
}

/** The gateway's route for one call when its person is the inbox. `note` hears what happened (audit). */
export function inboxRoute(
  inbox: GatewayInbox,
  call: InboxCall,
  note: (n: ApprovalNote) => void,
  approvals: ApprovalSettings,
): Route {
  return {
    name: 'gateway',
    grouped: false,
    person: {
      approvals,
      ask: async (request): Promise<AskOutcome> => {
        note({ id: request.id, state: 'pending' });
        if (call.signal.aborted) return cancelled(request, note);
        const link = inbox.link?.(request);
        const where = link ? ` at ${link}` : ' in the approval inbox';
        // Shown to the person behind the client: escaped as every approval prompt is (names.ts displaySafe).
        const message = `The call ${displaySafe(request.toolName)} waits for a person's approval${where} (rule ${displaySafe(JSON.stringify(request.rule))}: ${displaySafe(request.reason)}).`;
        const complete = tell(call, link, message, request.id);
        let stop: () => void = () => undefined;
        const aborted = new Promise<null>((resolve) => {
          const onAbort = (): void => resolve(null);
          call.signal.addEventListener('abort', onAbort, { once: true });
          stop = () => call.signal.removeEventListener('abort', onAbort);
        });
        let answer: Answer | null;
        try {
          answer = await Promise.race([inbox.ask(request), aborted]);
        } catch (error) {
          // The store failed: the call does not run (fail closed).
          const reason = `the approval could not be asked: ${error instanceof Error ? error.message : String(error)}`;
          note({ id: request.id, state: 'denied', reason });
          return { effect: 'deny', reason };
        } finally {
          stop();
          complete();
        }
        if (answer === null) return cancelled(request, note);
        note({
          id: request.id,
          state: answer.effect === 'allow' ? 'approved' : 'denied',
          ...(answer.reason ? { reason: answer.reason } : {}),
          ...(answer.approver ? { approver: answer.approver } : {}),
        });
        // The gateway does not remember answers: this one is for this call only.
        return { ...answer, remember: 'once' };
      },
    },
  };
}

function cancelled(request: ApprovalRequest, note: (n: ApprovalNote) => void): AskOutcome {
  const reason = 'the client cancelled the call while it waited for approval';
  note({ id: request.id, state: 'denied', reason });
  return { effect: 'deny', reason };
}

/** Tells the client where to answer; returns what to call once answered (URL elicitation's completion). */
function tell(call: InboxCall, link: string | undefined, message: string, id: string): () => void {
  const elicitation = call.server.getClientCapabilities()?.elicitation as { url?: unknown } | undefined;
  if (link && elicitation?.url !== undefined) {
    const elicitationId = `toolgate-approval-${id}`;
    // The decision is the inbox's: the client's reply (accept: the page was opened) does not answer it.
    call.server
      .elicitInput({ mode: 'url', message, url: link, elicitationId }, { signal: call.signal })
      .catch(() => undefined);
    const notify = call.server.createElicitationCompletionNotifier(elicitationId);
    return () => void notify().catch(() => undefined);
  }
  if (call.progressToken !== undefined) void call.sendProgress(message).catch(() => undefined);
  return () => undefined;
}
