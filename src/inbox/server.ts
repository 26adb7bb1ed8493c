/**
 * The approval inbox: a Hono app over an approval store. It lists pending approvals live (server-sent
 * events), answers them for authenticated approvers allowed to (bearer JWT, signed single-use links,
 * sessions), notifies webhooks, times unanswered approvals out to deny, and hands each answer to the
 * process waiting for it exactly once.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener, serve } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie, setCookie, deleteCookie } from 'hono/cookie';
import { streamSSE } from 'hono/streaming';
import { canonical, describe } from '../names.js';
import type { PermissionHandler } from '../permissions/handler.js';
import type { AgentRunner } from '../runner/runner.js';
import { canonicalJson, secretOf } from '../crypto.js';
import { INBOX_CSS, INBOX_JS } from './assets.js';
import {
  csrfToken,
  linkClaims,
  sameCsrf,
  sessionOf,
  signValue,
  type ApproverAuthenticator,
  type LinkClaims,
} from './auth.js';
import { deliver, payloadOf, type DeliveryReport, type InboxWebhook, type WebhookEvent } from './notify.js';
import { inboxHandler, RunnerInbox, type InboxHandlerOptions, type RunnerInboxOptions } from './sources.js';
import {
  editReviewHtml,
  escapeHtml,
  layout,
  linkHtml,
  listHtml,
  messageHtml,
  type PageContext,
  type RecordOutcome,
} from './render.js';
import { MemoryApprovalStore, MemoryNonceStore } from '../stores/memory.js';
import type {
  Answer,
  ApprovalRequest,
  ApprovalSource,
  ApprovalStore,
  NonceStore,
  PendingRecord,
  RememberScope,
} from '../stores/types.js';

/** Who may answer which approvals (the policy file's `approvals` section). */
export interface ApproverPolicy {
  /** Approvers by tenant; `*` applies to every tenant without its own list. */
  readonly tenants?: Readonly<Record<string, readonly string[]>>;
  /** Approvers by canonical tool name. */
  readonly tools?: Readonly<Record<string, readonly string[]>>;
  /** Nobody answers a request they made themselves (the caller). @default false */
  readonly fourEyes?: boolean;
}

/** One audit event: every answer given (and every answer refused), naming the approver. */
export interface InboxAuditRecord {
  readonly type: 'approval_answered' | 'approval_answer_refused' | 'approval_expired';
  /** Epoch ms. */
  readonly at: number;
  readonly approvalId: string;
  readonly approver: string | null;
  readonly via: 'bearer' | 'session' | 'link' | 'timeout' | null;
  readonly tool: string | null;
  readonly tenant: string | null;
  readonly runId: string | null;
  readonly effect: 'allow' | 'deny' | null;
  readonly remember: RememberScope | null;
  readonly edited: boolean;
  readonly reason: string | null;
}

/** Options of {@link createInbox}. */
export interface InboxOptions {
  /** The HMAC key of links, sessions and CSRF tokens (at least 16 bytes); replicas share it. */
  readonly secret: string | Uint8Array;
  /** @default a new MemoryApprovalStore (one process) */
  readonly store?: ApprovalStore;
  /** Where used link nonces are kept (share it between replicas). @default a new MemoryNonceStore */
  readonly nonces?: NonceStore;
  /** Verifies `Authorization: Bearer` tokens (see `jwtApprover`). @default bearer tokens are refused */
  readonly authenticate?: ApproverAuthenticator;
  /** Who may answer. @default any authenticated approver */
  readonly approvers?: ApproverPolicy;
  /** Webhooks by tenant; `*` is told about every tenant. */
  readonly webhooks?: Readonly<Record<string, InboxWebhook | readonly InboxWebhook[]>>;
  /** The inbox's public URL (links in webhooks), e.g. `https://ops.example/approvals`. @default the address `listen` got */
  readonly publicUrl?: string;
  /** The path the inbox is mounted at in a larger server, e.g. `/approvals`. @default '' */
  readonly basePath?: string;
  /** How long an approval waits before it times out to deny. @default 15 minutes */
  readonly ttlMs?: number;
  /** How long a session started by a link or a token lasts. @default 8 hours */
  readonly sessionTtlMs?: number;
  /** The policy version in force now: an answer given under another one is refused. @default not checked */
  readonly policyVersion?: () => string | null | undefined;
  /** Every answer, refused answer and time-out. A write that throws refuses the answer. */
  readonly audit?: { write(record: InboxAuditRecord): void | Promise<void> };
  /** Delays between webhook retries. @default [1000, 5000, 30000, 120000] */
  readonly retryDelaysMs?: readonly number[];
  /** How often expired approvals are timed out to deny; 0 disables the timer (call `sweep()`). @default 5000 */
  readonly sweepIntervalMs?: number;
  /** The clock. @default Date.now */
  readonly now?: () => number;
}

/** An approval as a source submits it (the store's record less what the inbox fills in). */
export type SubmittedApproval = Omit<PendingRecord, 'status' | 'answer' | 'answeredAt' | 'createdAt' | 'expiresAt'> & {
  readonly expiresAt?: number;
};

/** A running inbox server. */
export interface InboxServer {
  readonly url: string;
  close(): Promise<void>;
}

type Identity = { readonly approver: string; readonly via: 'bearer' | 'session'; readonly csrfKey: string };

const STATUS = {
  ok: 200,
  bad: 400,
  unauthorized: 401,
  forbidden: 403,
  missing: 404,
  conflict: 409,
  gone: 410,
} as const;
type Status = (typeof STATUS)[keyof typeof STATUS] | 500;

interface Outcome {
  readonly status: Status;
  readonly title: string;
  readonly detail: string;
}

const SESSION_COOKIE = 'toolgate_inbox';
const MAX_REASON = 2000;
const MAX_ARGUMENTS = 100_000;

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

function secretBytes(secret: unknown): Uint8Array {
  return secretOf(secret, 'createInbox option "secret"');
}

function fold(name: string): string {
  return name.normalize('NFKC').toLowerCase();
}

/**
 * The inbox. `fetch` is its Web-standard handler, `listener` the same for an existing `node:http`
 * server (mounted at `basePath`), `listen()` starts a server of its own on loopback.
 *
 * @example
 * const inbox = createInbox({ secret: process.env.INBOX_KEY!, authenticate: jwtApprover({ jwksUrl, issuer, audience }) });
 * const runs = inbox.runner(runner, { registry });
 * await runs.submit(await runner.run(agent, input));   // a paused run's approvals appear in the inbox
 * const server = await inbox.listen({ port: 8080 });
 */
export class Inbox {
  readonly #secret: Uint8Array;
  readonly #store: ApprovalStore;
  readonly #authenticate: ApproverAuthenticator | null;
  readonly #approvers: ApproverPolicy | null;
  readonly #webhooks: ReadonlyMap<string, readonly InboxWebhook[]>;
  #publicUrl: string | null;
  readonly #base: string;
  readonly #ttlMs: number;
  readonly #sessionTtlMs: number;
  readonly #policyVersion: (() => string | null | undefined) | null;
  readonly #audit: InboxOptions['audit'] | null;
  readonly #retryDelays: readonly number[] | undefined;
  readonly #now: () => number;
  readonly #waiting = new Map<string, (record: PendingRecord) => void>();
  readonly #outcomes = new Map<string, RecordOutcome>();
  readonly #listeners = new Set<(id: string) => void>();
  readonly #nonces: NonceStore;
  readonly #deliveries = new Set<Promise<DeliveryReport>>();
  readonly #unwatch: (() => void) | null;
  readonly #timer: NodeJS.Timeout | null;
  #loopbackOnly = false;
  readonly #app: Hono;
  /** The Web-standard handler. */
  readonly fetch: (request: Request) => Promise<Response>;
  /** A `node:http` request listener, for an existing server. */
  readonly listener: (req: IncomingMessage, res: ServerResponse) => Promise<void>;

  constructor(options: InboxOptions) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError(`createInbox expects an options object, got ${describe(options)}`);
    this.#secret = secretBytes(options.secret);
    this.#store = options.store ?? new MemoryApprovalStore(options.now ? { now: options.now } : {});
    this.#nonces = options.nonces ?? new MemoryNonceStore(options.now ? { now: options.now } : {});
    this.#authenticate = options.authenticate ?? null;
    const approvers = options.approvers ?? null;
    this.#approvers = approvers?.tools
      ? { ...approvers, tools: Object.fromEntries(Object.entries(approvers.tools).map(([k, v]) => [canonical(k), v])) }
      : approvers;
    const hooks = new Map<string, readonly InboxWebhook[]>();
    for (const [tenant, value] of Object.entries(options.webhooks ?? {})) {
      const list = Array.isArray(value) ? (value as readonly InboxWebhook[]) : [value as InboxWebhook];
      for (const hook of list) {
        if (typeof hook?.url !== 'string' || !/^https?:\/\//.test(hook.url))
          throw new TypeError(`webhook for tenant ${JSON.stringify(tenant)}: "url" must be an http(s) URL`);
        secretBytes(hook.secret);
      }
      hooks.set(tenant, list);
    }
    this.#webhooks = hooks;
    this.#publicUrl = options.publicUrl?.replace(/\/+$/, '') ?? null;
    const base = options.basePath ?? '';
    if (base !== '' && !/^\/[A-Za-z0-9._~/-]*[^/]$/.test(base))
      throw new TypeError(`createInbox option "basePath" must look like "/approvals", got ${describe(base)}`);
    this.#base = base;
    this.#ttlMs = options.ttlMs ?? 15 * 60_000;
    this.#sessionTtlMs = options.sessionTtlMs ?? 8 * 3_600_000;
    this.#policyVersion = options.policyVersion ?? null;
    this.#audit = options.audit ?? null;
    this.#retryDelays = options.retryDelaysMs;
    this.#now = options.now ?? Date.now;
    this.#unwatch = this.#store.watch ? this.#store.watch((id) => this.#changed(id)) : null;
    const every = options.sweepIntervalMs ?? 5000;
    this.#timer =
      every > 0
        ? setInterval(() => {
            this.sweep().catch(() => undefined);
          }, every)
        : null;
    this.#timer?.unref();
    this.#app = this.#routes();
    this.fetch = async (request) => this.#app.fetch(request);
    this.listener = getRequestListener((request) => this.#app.fetch(request));
  }

  /** The store the inbox reads. */
  get store(): ApprovalStore {
    return this.#store;
  }

  /** The inbox's clock (epoch ms). */
  now(): number {
    return this.#now();
  }

  /** Tracks paused runs of `runner`: their approvals appear here and the runs resume when answered. */
  runner(runner: AgentRunner, options: RunnerInboxOptions = {}): RunnerInbox {
    return new RunnerInbox(this, runner, options);
  }

  /** A PermissionHandler for a ToolRegistry whose asks wait for this inbox. */
  handler(options: InboxHandlerOptions = {}): PermissionHandler {
    return inboxHandler(this, options);
  }

  /** The default time an approval waits. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** Starts a server of its own (loopback by default). */
  async listen(options: { readonly port?: number; readonly host?: string } = {}): Promise<InboxServer> {
    const host = options.host ?? '127.0.0.1';
    const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
      const s = serve({ fetch: (request) => this.#app.fetch(request), port: options.port ?? 0, hostname: host }, () =>
        resolve(s),
      );
      s.once('error', reject);
    });
    const address = server.address() as AddressInfo;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}${this.#base}`;
    if (this.#publicUrl === null) {
      this.#publicUrl = url;
      this.#loopbackOnly = host === '127.0.0.1' || host === '::1' || host === 'localhost';
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
    if (this.#timer) clearInterval(this.#timer);
    this.#unwatch?.();
  }

  /** Resolves when every webhook delivery started so far has ended. */
  async flush(): Promise<DeliveryReport[]> {
    return Promise.all([...this.#deliveries]);
  }

  /**
   * Puts an approval in the store, tells the tenant's webhooks, and calls `onAnswer` exactly once in this
   * process when it is answered (or times out). Returns the stored record.
   */
  async submit(approval: SubmittedApproval, onAnswer: (record: PendingRecord) => void): Promise<PendingRecord> {
    const now = this.#now();
    const record: PendingRecord = {
      ...approval,
      createdAt: now,
      expiresAt: approval.expiresAt ?? now + this.#ttlMs,
      status: 'pending',
      answer: null,
      answeredAt: null,
    };
    this.#waiting.set(record.id, onAnswer);
    await this.#store.put(record);
    const stored = await this.#store.get(record.id);
    if (!stored) throw new Error(`the approval store lost approval ${record.id}`);
    if (stored.status !== 'pending') {
      void this.#settle(record.id);
      return stored;
    }
    this.#notify('approval.requested', stored);
    this.#changed(record.id);
    return stored;
  }

  /** Records the gate's verdict on an answered approval (shown in the inbox). */
  reportOutcome(id: string, outcome: RecordOutcome): void {
    this.#outcomes.set(id, outcome);
    this.#changed(id);
  }

  /**
   * Times out this process's approvals past their expiry: each is denied (the store reads it as `expired`,
   * and no answer can be given any more) and its source is told, so the model learns it timed out.
   * Returns how many. Runs every `sweepIntervalMs`.
   */
  async sweep(): Promise<number> {
    let count = 0;
    for (const record of await this.#store.list({ status: 'expired' })) {
      if (!this.#waiting.has(record.id)) continue;
      count++;
      await this.#writeAudit(
        record,
        { effect: 'deny', approver: 'toolgate:timeout', reason: 'no approver answered in time' },
        'timeout',
        'approval_expired',
      ).catch(() => undefined);
      this.#notify('approval.answered', record);
      await this.#settle(record.id);
      this.#changed(record.id);
    }
    // Answers given in another process (a store whose watch does not reach here) are picked up too.
    for (const id of [...this.#waiting.keys()]) await this.#settle(id);
    return count;
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
    return (request) =>
      new Promise<Answer>((resolve, reject) => {
        const limit = this.#now() + (options.ttlMs ?? this.#ttlMs);
        const expiresAt = Math.min(request.binding.expiresAt, limit);
        this.submit({ ...request, source, expiresAt }, (record) => {
          const seconds = Math.round((record.expiresAt - record.createdAt) / 1000);
          resolve(
            record.answer ?? {
              effect: 'deny',
              reason: `no approver answered within ${seconds} s, so the request timed out and was denied`,
              approver: 'toolgate:timeout',
            },
          );
        }).catch(reject);
      });
  }

  /**
   * A signed, expiring, single-use link for `approver`: to one approval (optionally for one answer), or,
   * without `approval`, a sign-in link to the inbox. Relative to the inbox unless `publicUrl` is known.
   */
  link(claims: {
    readonly approver: string;
    readonly approval?: string;
    readonly effect?: 'allow' | 'deny';
    readonly ttlMs?: number;
    readonly expiresAt?: number;
  }): string {
    if (typeof claims?.approver !== 'string' || claims.approver === '')
      throw new TypeError(`link(): "approver" must be a non-empty string, got ${describe(claims?.approver)}`);
    const full: LinkClaims = {
      approver: claims.approver,
      ...(claims.approval !== undefined ? { approval: claims.approval } : {}),
      ...(claims.effect !== undefined ? { effect: claims.effect } : {}),
      expiresAt: claims.expiresAt ?? this.#now() + (claims.ttlMs ?? this.#ttlMs),
      nonce: randomUUID(),
    };
    const token = signValue(this.#secret, 'toolgate.inbox.link', full);
    return `${this.#publicUrl ?? this.#base}/link?token=${encodeURIComponent(token)}`;
  }

  // ── delivery ──────────────────────────────────────────────────────────────────────────────────────

  #changed(id: string): void {
    for (const listener of this.#listeners) listener(id);
    if (this.#waiting.has(id)) void this.#settle(id);
  }

  async #settle(id: string): Promise<void> {
    if (!this.#waiting.has(id)) return;
    const record = await this.#store.get(id).catch(() => undefined);
    if (!record || record.status === 'pending') return;
    // Checked again after the await: of two concurrent settles only one finds the callback.
    const callback = this.#waiting.get(id);
    if (!callback) return;
    this.#waiting.delete(id);
    callback(record);
  }

  #notify(type: WebhookEvent, record: PendingRecord): void {
    const hooks = [...(this.#webhooks.get(record.tenant ?? '') ?? []), ...(this.#webhooks.get('*') ?? [])];
    for (const hook of hooks) {
      const approver = hook.approver ?? `webhook:${record.tenant ?? '*'}`;
      const links =
        type === 'approval.requested'
          ? {
              open: `${this.#publicUrl ?? this.#base}/`,
              approve: this.link({ approver, approval: record.id, effect: 'allow', expiresAt: record.expiresAt }),
              deny: this.link({ approver, approval: record.id, effect: 'deny', expiresAt: record.expiresAt }),
            }
          : null;
      const delivery = deliver(hook, payloadOf(type, record, links, this.#now()), {
        ...(this.#retryDelays ? { delaysMs: this.#retryDelays } : {}),
      });
      this.#deliveries.add(delivery);
      void delivery.then(() => this.#deliveries.delete(delivery));
    }
  }

  // ── answering ─────────────────────────────────────────────────────────────────────────────────────

  async #writeAudit(
    record: PendingRecord | undefined,
    answer: Answer | null,
    via: InboxAuditRecord['via'],
    type: InboxAuditRecord['type'],
    approvalId: string = record?.id ?? '',
    refusal: string | null = null,
  ): Promise<void> {
    if (!this.#audit) return;
    await this.#audit.write({
      type,
      at: this.#now(),
      approvalId,
      approver: answer?.approver ?? null,
      via,
      tool: record?.canonical ?? null,
      tenant: record?.tenant ?? null,
      runId: record?.runId ?? null,
      effect: answer?.effect ?? null,
      remember: answer ? (answer.remember ?? 'once') : null,
      edited: answer?.arguments !== undefined,
      reason: refusal ?? answer?.reason ?? null,
    });
  }

  /** Whether `approver` is named for `record`'s tenant and tool (what the list shows them). */
  #named(record: PendingRecord, approver: string): boolean {
    const policy = this.#approvers;
    if (!policy || (policy.tenants === undefined && policy.tools === undefined)) return true;
    return this.#mayAnswer(record, approver) === null || record.caller === approver;
  }

  /** Who may answer `record`: null when `approver` may, else why not. */
  #mayAnswer(record: PendingRecord, approver: string): string | null {
    const policy = this.#approvers;
    if (policy?.fourEyes === true && record.caller !== null && fold(record.caller) === fold(approver))
      return 'four eyes: nobody answers a request they made themselves';
    if (!policy || (policy.tenants === undefined && policy.tools === undefined)) return null;
    const lists: (readonly string[])[] = [];
    const byTool = policy.tools?.[record.canonical];
    if (byTool) lists.push(byTool);
    const byTenant = policy.tenants?.[record.tenant ?? ''] ?? policy.tenants?.['*'];
    if (byTenant) lists.push(byTenant);
    if (lists.length === 0) return 'no approver is named for this tenant or tool';
    const me = fold(approver);
    for (const list of lists) if (!list.some((name) => fold(name) === me)) return `${approver} is not an approver here`;
    return null;
  }

  async #answer(
    id: string,
    approver: string,
    via: 'bearer' | 'session' | 'link',
    form: Readonly<Record<string, unknown>>,
    onlyEffect: 'allow' | 'deny' | null,
  ): Promise<Outcome> {
    const record = await this.#store.get(id);
    const refuse = async (status: Status, title: string, detail: string): Promise<Outcome> => {
      await this.#writeAudit(
        record,
        { effect: form['effect'] === 'allow' ? 'allow' : 'deny', approver },
        via,
        'approval_answer_refused',
        id,
        detail,
      ).catch(() => undefined);
      return { status, title, detail };
    };
    if (!record) return refuse(STATUS.missing, 'No such approval', 'There is no approval with this id.');
    if (record.status === 'expired' || (record.status === 'pending' && record.expiresAt <= this.#now()))
      return refuse(STATUS.gone, 'Expired', 'This approval expired; it is denied and the model is told so.');
    if (record.status !== 'pending') {
      const by = record.answer?.approver ? ` by ${record.answer.approver}` : '';
      return refuse(
        STATUS.conflict,
        'Already answered',
        `This approval was already answered${by} (${record.answer?.effect ?? record.status}); nothing more runs.`,
      );
    }
    if (record.expiresAt <= this.#now())
      return refuse(STATUS.gone, 'Expired', 'This approval expired; it is denied and the model is told so.');
    if (this.#policyVersion) {
      const now = this.#policyVersion() ?? null;
      if (now !== record.binding.policyVersion)
        return refuse(
          STATUS.conflict,
          'Policy changed',
          `The policy changed since this was asked (asked under ${JSON.stringify(record.binding.policyVersion)}, now ${JSON.stringify(now)}); the answer is refused.`,
        );
    }
    const who = this.#mayAnswer(record, approver);
    if (who !== null) return refuse(STATUS.forbidden, 'Not allowed', who);
    const effect = form['effect'];
    if (effect !== 'allow' && effect !== 'deny')
      return refuse(STATUS.bad, 'Bad answer', 'The answer must be "allow" or "deny".');
    if (onlyEffect !== null && effect !== onlyEffect)
      return refuse(
        STATUS.forbidden,
        'Not allowed',
        `This link can only ${onlyEffect === 'allow' ? 'approve' : 'deny'}.`,
      );
    const remember = form['remember'] ?? 'once';
    if (remember !== 'once' && remember !== 'run' && remember !== 'session')
      return refuse(STATUS.bad, 'Bad answer', 'Remember must be "once", "run" or "session".');
    if (remember !== 'once' && record.source !== 'runner')
      return refuse(STATUS.bad, 'Bad answer', `A ${record.source} approval can only be answered once.`);
    const reasonText = typeof form['reason'] === 'string' ? form['reason'].trim() : '';
    if (reasonText.length > MAX_REASON)
      return refuse(STATUS.bad, 'Bad answer', `The reason is longer than ${MAX_REASON} characters.`);
    let edited: Record<string, unknown> | undefined;
    const rawArgs = form['arguments'];
    if (typeof rawArgs === 'string' && rawArgs.trim() !== '') {
      const parsed = parseArguments(rawArgs);
      if (typeof parsed === 'string') return refuse(STATUS.bad, 'Bad arguments', parsed);
      if (canonicalJson(parsed) !== canonicalJson(record.parameters)) edited = parsed;
    }
    if (edited !== undefined && effect !== 'allow')
      return refuse(STATUS.bad, 'Bad answer', 'Edited arguments go with an approval, not a deny.');
    if (edited !== undefined && record.source === 'registry')
      return refuse(STATUS.bad, 'Bad answer', `A ${record.source} approval cannot be answered with edited arguments.`);
    const answer: Answer = {
      effect,
      remember,
      approver,
      ...(reasonText !== '' ? { reason: reasonText } : {}),
      ...(edited !== undefined ? { arguments: edited } : {}),
    };
    // The audit event is written before the answer counts: an answer that cannot be audited is not given.
    try {
      await this.#writeAudit(record, answer, via, 'approval_answered');
    } catch (error) {
      return {
        status: 500,
        title: 'Not recorded',
        detail: `The answer could not be written to the audit log, so it was not given (${error instanceof Error ? error.message : describe(error)}).`,
      };
    }
    if (!(await this.#store.answer(id, answer)))
      return refuse(STATUS.conflict, 'Already answered', 'Someone answered this approval first; nothing more runs.');
    this.#notify('approval.answered', { ...record, status: 'answered', answer });
    this.#changed(id);
    await this.#settle(id);
    const what = effect === 'allow' ? (edited ? 'Approved with edited arguments' : 'Approved') : 'Denied';
    return {
      status: STATUS.ok,
      title: what,
      detail:
        effect === 'allow'
          ? `${record.toolName} was approved${edited ? ' with edited arguments (they pass the whole gate again)' : ''}.`
          : `${record.toolName} was denied${reasonText ? `: ${reasonText}` : ''}.`,
    };
  }

  // ── HTTP ──────────────────────────────────────────────────────────────────────────────────────────

  async #identity(c: Context): Promise<Identity | null> {
    const header = c.req.header('authorization');
    if (header !== undefined) {
      const match = /^Bearer\s+(\S+)$/i.exec(header);
      if (!match || !this.#authenticate) return null;
      try {
        const approver = await this.#authenticate(match[1]!);
        if (typeof approver !== 'string' || approver === '') return null;
        return { approver, via: 'bearer', csrfKey: `bearer:${approver}` };
      } catch {
        return null;
      }
    }
    const session = sessionOf(this.#secret, getCookie(c, SESSION_COOKIE), this.#now());
    return session ? { approver: session.approver, via: 'session', csrfKey: `session:${session.id}` } : null;
  }

  #page(c: Context, identity: Identity | null): PageContext {
    return {
      base: this.#base,
      approver: identity?.approver ?? null,
      csrf: identity ? csrfToken(this.#secret, identity.csrfKey) : '',
      now: this.#now(),
    };
  }

  /** A cross-site form post is refused: the Origin (or Sec-Fetch-Site) must say the inbox itself. */
  #sameOrigin(c: Context): boolean {
    const site = c.req.header('sec-fetch-site');
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
    const origin = c.req.header('origin');
    if (origin === undefined) return true;
    // The published origin when there is one (the Host header is the client's to choose: DNS rebinding).
    return origin === (this.#publicUrl ? new URL(this.#publicUrl).origin : new URL(c.req.url).origin);
  }

  async #list(approver: string): Promise<{ pending: PendingRecord[]; recent: PendingRecord[] }> {
    // An approver sees the approvals of the tenants and tools they are named for, not everyone's.
    const all = (await this.#store.list()).filter((r) => this.#named(r, approver));
    const pending = all.filter((r) => r.status === 'pending').sort((a, b) => a.createdAt - b.createdAt);
    const recent = all
      .filter((r) => r.status !== 'pending')
      .sort((a, b) => (b.answeredAt ?? b.createdAt) - (a.answeredAt ?? a.createdAt))
      .slice(0, 20);
    return { pending, recent };
  }

  #routes(): Hono {
    const app = new Hono().basePath(this.#base || '/');
    app.use('*', async (c, next) => {
      await next();
      c.header('content-security-policy', CSP);
      c.header('x-content-type-options', 'nosniff');
      c.header('x-frame-options', 'DENY');
      c.header('referrer-policy', 'same-origin');
      c.header('cross-origin-opener-policy', 'same-origin');
      if (!c.res.headers.get('cache-control')) c.header('cache-control', 'no-store');
    });
    app.use('*', async (c, next) => {
      // A server of its own on loopback answers only to loopback names (no DNS rebinding).
      if (this.#loopbackOnly) {
        const host = (c.req.header('host') ?? '').replace(/:\d+$/, '').toLowerCase();
        if (host !== '127.0.0.1' && host !== 'localhost' && host !== '[::1]') return c.text('unknown host', 421);
      }
      return next();
    });
    app.use('*', bodyLimit({ maxSize: 256 * 1024, onError: (c) => c.text('the request body is too large', 413) }));
    app.onError((error, c) => {
      const page = this.#page(c, null);
      return c.html(layout(page, 'Error', messageHtml(page, 'Something failed', error.message, 'error')), 500);
    });
    const html = (c: Context, identity: Identity | null, title: string, body: string, status: Status = 200) =>
      c.html(layout(this.#page(c, identity), title, body), status);
    const signIn = (c: Context) =>
      html(
        c,
        null,
        'Sign in',
        messageHtml(
          this.#page(c, null),
          'Sign in to answer approvals',
          'Open a signed link you were sent, or send a bearer token (OIDC / JWT) with your requests.',
          'error',
        ),
        STATUS.unauthorized,
      );

    app.get('/assets/inbox.css', (c) => {
      c.header('content-type', 'text/css; charset=utf-8');
      c.header('cache-control', 'public, max-age=300');
      return c.body(INBOX_CSS);
    });
    app.get('/assets/inbox.js', (c) => {
      c.header('content-type', 'text/javascript; charset=utf-8');
      c.header('cache-control', 'public, max-age=300');
      return c.body(INBOX_JS);
    });

    app.get('/', async (c) => {
      const identity = await this.#identity(c);
      if (!identity) return signIn(c);
      const { pending, recent } = await this.#list(identity.approver);
      return html(
        c,
        identity,
        `Approvals (${pending.length})`,
        listHtml(this.#page(c, identity), pending, recent, this.#outcomes),
      );
    });

    app.get('/fragment', async (c) => {
      const identity = await this.#identity(c);
      if (!identity) return c.text('sign in', STATUS.unauthorized);
      const { pending, recent } = await this.#list(identity.approver);
      return c.html(listHtml(this.#page(c, identity), pending, recent, this.#outcomes));
    });

    app.get('/events', async (c) => {
      const identity = await this.#identity(c);
      if (!identity) return c.text('sign in', STATUS.unauthorized);
      return streamSSE(c, async (stream) => {
        let wake: (() => void) | null = null;
        const changed = new Set<string>();
        const listener = (id: string) => {
          changed.add(id);
          wake?.();
        };
        this.#listeners.add(listener);
        stream.onAbort(() => {
          this.#listeners.delete(listener);
          wake?.();
        });
        await stream.writeSSE({ event: 'ready', data: '' });
        while (!stream.aborted) {
          if (changed.size === 0) {
            await new Promise<void>((resolve) => {
              wake = resolve;
              setTimeout(resolve, 15_000).unref();
            });
            wake = null;
          }
          if (stream.aborted) break;
          if (changed.size === 0) {
            await stream.write(': keep-alive\n\n');
            continue;
          }
          const ids = [...changed];
          changed.clear();
          await stream.writeSSE({ event: 'changed', data: JSON.stringify(ids) });
        }
        this.#listeners.delete(listener);
      });
    });

    app.post('/approvals/:id/answer', async (c) => {
      const identity = await this.#identity(c);
      if (!identity) return signIn(c);
      const form = await c.req.parseBody();
      if (!this.#sameOrigin(c) || !sameCsrf(this.#secret, identity.csrfKey, form['csrf']))
        return html(
          c,
          identity,
          'Refused',
          messageHtml(
            this.#page(c, identity),
            'Refused',
            'The form did not come from this inbox (CSRF check failed).',
            'error',
          ),
          STATUS.forbidden,
        );
      const outcome = await this.#answer(c.req.param('id'), identity.approver, identity.via, form, null);
      return html(
        c,
        identity,
        outcome.title,
        messageHtml(this.#page(c, identity), outcome.title, outcome.detail, outcome.status === 200 ? 'ok' : 'error'),
        outcome.status,
      );
    });

    app.post('/approvals/:id/edit', async (c) => {
      const identity = await this.#identity(c);
      if (!identity) return signIn(c);
      const form = await c.req.parseBody();
      const page = this.#page(c, identity);
      if (!this.#sameOrigin(c) || !sameCsrf(this.#secret, identity.csrfKey, form['csrf']))
        return html(
          c,
          identity,
          'Refused',
          messageHtml(page, 'Refused', 'CSRF check failed.', 'error'),
          STATUS.forbidden,
        );
      const record = await this.#store.get(c.req.param('id'));
      if (!record || record.status !== 'pending')
        return html(
          c,
          identity,
          'Not waiting',
          messageHtml(page, 'Not waiting', 'This approval is no longer waiting.', 'error'),
          STATUS.conflict,
        );
      const parsed =
        typeof form['arguments'] === 'string' ? parseArguments(form['arguments']) : 'No arguments were given.';
      if (typeof parsed === 'string')
        return html(c, identity, 'Bad arguments', messageHtml(page, 'Bad arguments', parsed, 'error'), STATUS.bad);
      return html(c, identity, 'Review the edited call', editReviewHtml(page, record, parsed));
    });

    app.get('/link', async (c) => {
      const token = c.req.query('token');
      const claims = linkClaims(this.#secret, token, this.#now());
      const page = this.#page(c, null);
      if (typeof claims === 'string')
        return html(c, null, 'Link refused', messageHtml(page, 'Link refused', claims, 'error'), STATUS.forbidden);
      const who = { ...page, approver: claims.approver };
      if (claims.approval === undefined)
        return html(
          c,
          null,
          'Sign in',
          `<h2>Sign in as ${escapeHtml(claims.approver)}?</h2><form method="post" action="${this.#base}/link"><input type="hidden" name="token" value="${escapeHtml(token ?? '')}"><div class="buttons"><button type="submit">Sign in</button></div></form>`,
        );
      const record = await this.#store.get(claims.approval);
      if (!record)
        return html(
          c,
          null,
          'No such approval',
          messageHtml(page, 'No such approval', 'There is no approval with this id.', 'error'),
          STATUS.missing,
        );
      return c.html(layout(who, 'Answer an approval', linkHtml(who, record, token ?? '', claims.effect ?? null)));
    });

    app.post('/link', async (c) => {
      const form = await c.req.parseBody();
      const page = this.#page(c, null);
      if (!this.#sameOrigin(c))
        return html(
          c,
          null,
          'Refused',
          messageHtml(page, 'Refused', 'The form did not come from this inbox.', 'error'),
          STATUS.forbidden,
        );
      const claims = linkClaims(this.#secret, form['token'], this.#now());
      if (typeof claims === 'string')
        return html(c, null, 'Link refused', messageHtml(page, 'Link refused', claims, 'error'), STATUS.forbidden);
      // Single use: the nonce is consumed before anything else happens.
      if (!(await this.#nonces.consume(claims.nonce, claims.expiresAt - this.#now())))
        return html(
          c,
          null,
          'Link used',
          messageHtml(page, 'Link already used', 'This link was already used; it works once.', 'error'),
          STATUS.gone,
        );
      if (claims.approval === undefined) {
        const session = signValue(this.#secret, 'toolgate.inbox.session', {
          approver: claims.approver,
          expiresAt: Math.min(claims.expiresAt + this.#sessionTtlMs, this.#now() + this.#sessionTtlMs),
          id: randomUUID(),
        });
        setCookie(c, SESSION_COOKIE, session, {
          httpOnly: true,
          sameSite: 'Strict',
          path: this.#base || '/',
          secure: new URL(c.req.url).protocol === 'https:',
          maxAge: Math.floor(this.#sessionTtlMs / 1000),
        });
        return c.redirect(`${this.#base}/`, 303);
      }
      const outcome = await this.#answer(
        claims.approval,
        claims.approver,
        'link',
        // A link answers the call it shows: once, and without edits.
        { effect: form['effect'], reason: form['reason'], remember: 'once' },
        claims.effect ?? null,
      );
      const who = { ...page, approver: claims.approver };
      return c.html(
        layout(
          who,
          outcome.title,
          messageHtml(who, outcome.title, outcome.detail, outcome.status === 200 ? 'ok' : 'error'),
        ),
        outcome.status,
      );
    });

    app.post('/logout', async (c) => {
      const identity = await this.#identity(c);
      const form = await c.req.parseBody();
      if (identity && this.#sameOrigin(c) && sameCsrf(this.#secret, identity.csrfKey, form['csrf']))
        deleteCookie(c, SESSION_COOKIE, { path: this.#base || '/' });
      return c.redirect(`${this.#base}/`, 303);
    });
    return app;
  }
}

/** Edited arguments from a form: a JSON object, or why not. */
function parseArguments(raw: string): Record<string, unknown> | string {
  if (raw.length > MAX_ARGUMENTS) return `The arguments are longer than ${MAX_ARGUMENTS} characters.`;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return `The arguments are not valid JSON: ${error instanceof Error ? error.message : describe(error)}.`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return 'The arguments must be a JSON object.';
  return value as Record<string, unknown>;
}

/** Creates an {@link Inbox}. */
export function createInbox(options: InboxOptions): Inbox {
  return new Inbox(options);
}
