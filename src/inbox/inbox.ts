/**
 * The approval inbox's façade — the one file the rest of toolgate (and `toolgate/inbox`) imports. An
 * `Inbox` is four parts over one approval store:
 *
 *   queue.ts    what waits: submitted approvals, each answer handed to its waiter once, webhooks, reminders
 *   answer.ts   who may see and answer what (THE approver check, gate/approvers.ts), and the answer itself
 *   http.ts     pages, the live stream, forms and signed links (a Hono app)
 *   history.ts  the "Answered" view, read back from the audit log
 *
 * and the sources that feed it (sources.ts: paused AgentRunner runs, the registry's handler route).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener, serve } from '@hono/node-server';
import { approverVerdict } from '../gate/index.js';
import { describe } from '../names.js';
import type { PermissionHandler } from '../permissions/handler.js';
import type { AgentRunner } from '../runner/runner.js';
import type { Answer, ApprovalRequest, ApprovalSource, ApprovalStore, PendingRecord } from '../stores/types.js';
import { Answering } from './answer.js';
import { contextOf, signLink, type InboxContext, type InboxOptions, type LinkRequest } from './context.js';
import { History } from './history.js';
import { inboxApp } from './http.js';
import type { DeliveryReport } from './notify.js';
import { ApprovalQueue, type SubmittedApproval } from './queue.js';
import type { RecordOutcome } from './render.js';
import { inboxHandler, RunnerInbox, type InboxHandlerOptions, type RunnerInboxOptions } from './sources.js';

export type {
  ApproverPolicy,
  InboxAuditEntry,
  InboxAuditLog,
  InboxAuditRecord,
  InboxOptions,
  InboxReminders,
  LinkRequest,
} from './context.js';
export type { SubmittedApproval } from './queue.js';
export type { RecordOutcome } from './render.js';
export type { CardOptions, CardRisk, Risk, ToolCard } from './summary.js';
export { openInboxAudit, type InboxAuditStore } from './audit-log.js';
export { RunnerInbox, inboxHandler, traceOf } from './sources.js';
export type { RunnerInboxOptions, TrackedRun, InboxHandlerOptions } from './sources.js';
export { jwtApprover } from './auth.js';
export type { ApproverAuthenticator, JwtApproverOptions } from './auth.js';
export { SIGNATURE_HEADER, webhookSignature, slackMessage } from './notify.js';
export type { InboxWebhook, WebhookPayload, WebhookEvent, DeliveryReport } from './notify.js';

/** A running inbox server. */
export interface InboxServer {
  readonly url: string;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/**
 * The inbox. `fetch` is its Web-standard handler, `listener` the same for an existing `node:http`
 * server (mounted at `basePath`), `listen()` starts a server of its own on loopback.
 *
 * @example
 * const inbox = createInbox({ secret: process.env.INBOX_KEY!, authenticate: jwtApprover({ jwksUrl, issuer, audience }) });
 * const runs = inbox.runner(runner, { registry });
 * await runs.track(await runner.run(agent, input));   // a paused run's approvals appear in the inbox
 * const server = await inbox.listen({ port: 8080 });
 */
export class Inbox {
  readonly #ctx: InboxContext;
  readonly #queue: ApprovalQueue;
  /** The Web-standard handler. */
  readonly fetch: (request: Request) => Promise<Response>;
  /** A `node:http` request listener, for an existing server. */
  readonly listener: (req: IncomingMessage, res: ServerResponse) => Promise<void>;

  constructor(options: InboxOptions) {
    const ctx = (this.#ctx = contextOf(options));
    const every = options.sweepIntervalMs ?? 5000;
    if (!Number.isFinite(every) || every < 0)
      throw new TypeError(`createInbox option "sweepIntervalMs" must be 0 or more ms, got ${describe(every)}`);
    const queue = (this.#queue = new ApprovalQueue(ctx, every));
    const answering = new Answering(ctx, queue);
    const history = new History(ctx, (who, record) => approverVerdict(ctx.approvers, who, record));
    const app = inboxApp({ ctx, queue, answering, history });
    this.fetch = async (request) => app.fetch(request);
    this.listener = getRequestListener((request) => app.fetch(request));
  }

  /** The store the inbox reads. */
  get store(): ApprovalStore {
    return this.#ctx.store;
  }

  /** The inbox's clock (epoch ms). */
  now(): number {
    return this.#ctx.now();
  }

  /** The default time an approval waits. */
  get ttlMs(): number {
    return this.#ctx.ttlMs;
  }

  /** Tracks paused runs of `runner`: their approvals appear here and the runs resume when answered. */
  runner(runner: AgentRunner, options: RunnerInboxOptions = {}): RunnerInbox {
    return new RunnerInbox(this.#queue, runner, options);
  }

  /** A PermissionHandler for a ToolRegistry whose asks wait for this inbox. */
  handler(options: InboxHandlerOptions = {}): PermissionHandler {
    return inboxHandler(this.#queue, options);
  }

  /** Starts a server of its own (loopback by default). */
  async listen(options: { readonly port?: number; readonly host?: string } = {}): Promise<InboxServer> {
    const host = options.host ?? '127.0.0.1';
    const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
      const s = serve({ fetch: this.fetch, port: options.port ?? 0, hostname: host }, () => resolve(s));
      s.once('error', reject);
    });
    const address = server.address() as AddressInfo;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}${this.#ctx.base}`;
    if (this.#ctx.publicUrl === null) {
      this.#ctx.publicUrl = url;
      this.#ctx.loopbackOnly = LOOPBACK.has(host);
    }
    return {
      url,
      close: () =>
        new Promise<void>((resolve) => {
          (server as { closeAllConnections?: () => void }).closeAllConnections?.();
          server.close(() => resolve());
        }),
    };
  }

  /** Stops the time-out timer and the store watch. */
  close(): void {
    this.#queue.close();
  }

  /** Resolves when every webhook delivery started so far has ended. */
  async flush(): Promise<DeliveryReport[]> {
    return this.#queue.flush();
  }

  /**
   * Puts an approval in the store, tells the tenant's webhooks, and calls `onAnswer` exactly once in this
   * process when it is answered (or times out). Returns the stored record.
   */
  async submit(approval: SubmittedApproval, onAnswer: (record: PendingRecord) => void): Promise<PendingRecord> {
    return this.#queue.submit(approval, onAnswer);
  }

  /** Records the gate's verdict on an answered approval (shown in the inbox, written to the audit log). */
  reportOutcome(id: string, outcome: RecordOutcome): void {
    this.#queue.reportOutcome(id, outcome);
  }

  /**
   * Times out this process's approvals past their expiry: each is denied (the store reads it as `expired`,
   * and no answer can be given any more) and its source is told, so the model learns it timed out. Sends
   * the reminders that are due. Returns how many timed out. Runs every `sweepIntervalMs`.
   */
  async sweep(): Promise<number> {
    return this.#queue.sweep();
  }

  /**
   * A route's `ask` that waits for this inbox (the gateway's, or any route of your own): the request is
   * stored and shown, and the person's answer returned — with its reason, edited arguments, remember scope
   * and approver. Unanswered by the binding's expiry (or `ttlMs`), it is a deny saying it timed out.
   */
  ask(
    source: ApprovalSource,
    options: { readonly ttlMs?: number } = {},
  ): (request: ApprovalRequest) => Promise<Answer> {
    return this.#queue.ask(source, options);
  }

  /**
   * A signed, expiring, single-use link for `approver` (acting for `tenants`, when given): to one approval
   * (optionally for one answer), or, without `approval`, a sign-in link to the inbox. Relative to the
   * inbox unless `publicUrl` is known.
   */
  link(claims: LinkRequest): string {
    return signLink(this.#ctx, claims);
  }
}

/** Creates an {@link Inbox}. */
export function createInbox(options: InboxOptions): Inbox {
  return new Inbox(options);
}
