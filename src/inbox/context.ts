/**
 * What every part of the inbox shares, read once from `createInbox`'s options: the secret, the store, the
 * clock, where it is published (its base path and public URL), the approver rules, the audit writer and
 * signed links. The queue, the answering and the HTTP layer each take this one object; none of them
 * reads the options again.
 */
import { randomUUID } from 'node:crypto';
import type { ApproverIdentity, ApproverRules } from '../contracts/approval.js';
import { secretOf } from '../crypto.js';
import { checkApproverRules } from '../gate/index.js';
import { describe } from '../names.js';
import { MemoryApprovalStore, MemoryNonceStore } from '../stores/memory.js';
import type { Answer, ApprovalStore, NonceStore, PendingRecord, RememberScope } from '../stores/types.js';
import { signValue, type ApproverAuthenticator, type LinkClaims } from './auth.js';
import type { InboxWebhook } from './notify.js';
import { cardsOf, type CardOptions, type Cards } from './summary.js';

/** Who may answer which approvals (the policy file's `approvals` section). */
export type ApproverPolicy = ApproverRules;

/**
 * One audit event: every answer given (and every answer refused), naming the approver; every time-out; and
 * what the gate did with an answered call (`approval_outcome`: ran, refused, failed) once its source tells.
 */
export interface InboxAuditRecord {
  readonly type: 'approval_answered' | 'approval_answer_refused' | 'approval_expired' | 'approval_outcome';
  /** Epoch ms. */
  readonly at: number;
  readonly approvalId: string;
  readonly approver: string | null;
  readonly via: 'bearer' | 'session' | 'link' | 'timeout' | null;
  readonly tool: string | null;
  readonly tenant: string | null;
  /** Who asked (the request's caller). */
  readonly caller?: string | null;
  readonly runId: string | null;
  readonly effect: 'allow' | 'deny' | null;
  readonly remember: RememberScope | null;
  readonly edited: boolean;
  readonly reason: string | null;
  /** The card's one-line summary when the record was written. */
  readonly summary?: string | null;
  /** `approval_outcome` only: what the gate did after the answer. */
  readonly outcome?: 'ran' | 'refused' | 'failed' | null;
}

/** An audit record as an audit store reads it back: with its place in the log (a cursor for paging). */
export type InboxAuditEntry = InboxAuditRecord & { readonly seq: string };

/** Where the inbox writes its audit records and reads its history from (`openInboxAudit`: SQLite, PostgreSQL). */
export interface InboxAuditLog {
  write(record: InboxAuditRecord): void | Promise<void>;
  /** Records newest first: at most `limit`, all before the cursor `before` when given. */
  read?(query: { readonly before?: string; readonly limit: number }): Promise<readonly InboxAuditEntry[]>;
}

/** A reminder before an approval expires, and where it goes (see `InboxOptions.reminders`). */
export interface InboxReminders {
  /** How long before the expiry the reminder is sent (ms). */
  readonly beforeExpiryMs: number;
  /** Webhooks told instead of the tenant's own (an escalation channel). @default the tenant's webhooks */
  readonly webhooks?: readonly InboxWebhook[];
  /**
   * A second approver list the reminder escalates to: these approvers may then answer the request too
   * (besides everyone the rules name), and the reminder's links are made for the first of them.
   */
  readonly escalateTo?: readonly string[];
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
  /** Who may see and answer. @default any authenticated approver (bound to their tenants, when they have any) */
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
  /**
   * Every answer, refused answer, time-out and outcome. With `read` (`openInboxAudit('sqlite:…' |
   * 'postgres://…')`) it is also where the "Answered" view reads from, so history survives a restart.
   * An answer counts once the store takes it; its record is written then (retried; a write that still
   * fails is reported with a 500).
   */
  readonly audit?: InboxAuditLog;
  /**
   * How cards read: a one-line summary per tool (`"Refund {amount} EUR on order {order}"`), risk by rule
   * and by argument thresholds (the policy file's `tools.<name>.summary` / `risk` and `rules[].risk`).
   * @default the tool and its two most telling arguments; no risk
   */
  readonly cards?: CardOptions;
  /** A reminder before each approval expires (webhooks), and an optional escalation. @default none */
  readonly reminders?: InboxReminders;
  /** Delays between webhook retries. @default [1000, 5000, 30000, 120000] */
  readonly retryDelaysMs?: readonly number[];
  /** How often expired approvals are timed out to deny; 0 disables the timer (call `sweep()`). @default 5000 */
  readonly sweepIntervalMs?: number;
  /** The clock. @default Date.now */
  readonly now?: () => number;
}

/** A signed-in approver as the inbox knows them: who (and for which tenants), and how they signed in. */
export interface InboxIdentity extends ApproverIdentity {
  readonly via: 'bearer' | 'session' | 'link';
  /** What the CSRF token of their forms is an HMAC of. */
  readonly csrfKey: string;
}

/** The inbox's settings, read once. */
export interface InboxContext {
  readonly secret: Uint8Array;
  readonly store: ApprovalStore;
  readonly nonces: NonceStore;
  readonly authenticate: ApproverAuthenticator | null;
  readonly approvers: ApproverRules | null;
  readonly webhooks: ReadonlyMap<string, readonly InboxWebhook[]>;
  readonly base: string;
  /** The published URL (without a trailing slash), once known. */
  publicUrl: string | null;
  /** A server of its own on loopback answers only to loopback host names. */
  loopbackOnly: boolean;
  readonly ttlMs: number;
  readonly sessionTtlMs: number;
  readonly policyVersion: (() => string | null | undefined) | null;
  readonly audit: InboxAuditLog | null;
  readonly cards: Cards;
  readonly reminders: InboxReminders | null;
  readonly retryDelays: readonly number[] | undefined;
  readonly now: () => number;
}

export function secretBytes(secret: unknown, where = 'createInbox option "secret"'): Uint8Array {
  return secretOf(secret, where);
}

function webhooksOf(value: InboxOptions['webhooks']): Map<string, readonly InboxWebhook[]> {
  const hooks = new Map<string, readonly InboxWebhook[]>();
  for (const [tenant, entry] of Object.entries(value ?? {})) {
    const list = Array.isArray(entry) ? (entry as readonly InboxWebhook[]) : [entry as InboxWebhook];
    for (const hook of list) checkWebhook(hook, `webhook for tenant ${JSON.stringify(tenant)}`);
    hooks.set(tenant, list);
  }
  return hooks;
}

function checkWebhook(hook: InboxWebhook, where: string): void {
  if (typeof hook?.url !== 'string' || !/^https?:\/\//.test(hook.url))
    throw new TypeError(`${where}: "url" must be an http(s) URL`);
  secretBytes(hook.secret, `${where}: "secret"`);
}

function remindersOf(value: InboxOptions['reminders']): InboxReminders | null {
  if (value === undefined) return null;
  const where = 'createInbox option "reminders"';
  if (typeof value !== 'object' || value === null) throw new TypeError(`${where} must be an object`);
  if (!Number.isFinite(value.beforeExpiryMs) || value.beforeExpiryMs <= 0)
    throw new TypeError(`${where}.beforeExpiryMs must be a positive number, got ${describe(value.beforeExpiryMs)}`);
  for (const hook of value.webhooks ?? []) checkWebhook(hook, `${where}.webhooks`);
  if (
    value.escalateTo !== undefined &&
    (!Array.isArray(value.escalateTo) || value.escalateTo.some((n) => typeof n !== 'string' || n === ''))
  )
    throw new TypeError(`${where}.escalateTo must be a list of approver names, got ${describe(value.escalateTo)}`);
  return value;
}

function positive(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0)
    throw new TypeError(`createInbox option "${name}" must be a positive number of ms, got ${describe(value)}`);
  return value;
}

/** Reads and checks `createInbox`'s options; throws a TypeError naming the option that is wrong. */
export function contextOf(options: InboxOptions): InboxContext {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`createInbox expects an options object, got ${describe(options)}`);
  const secret = secretBytes(options.secret);
  const approvers = options.approvers ?? null;
  if (approvers !== null) checkApproverRules(approvers, 'createInbox option "approvers"');
  const base = options.basePath ?? '';
  if (base !== '' && !/^\/[A-Za-z0-9._~/-]*[^/]$/.test(base))
    throw new TypeError(`createInbox option "basePath" must look like "/approvals", got ${describe(base)}`);
  let publicUrl: string | null = null;
  if (options.publicUrl !== undefined) {
    if (typeof options.publicUrl !== 'string' || !/^https?:\/\/[^/]/.test(options.publicUrl))
      throw new TypeError(`createInbox option "publicUrl" must be an http(s) URL, got ${describe(options.publicUrl)}`);
    publicUrl = options.publicUrl.replace(/\/+$/, '');
  }
  const now = options.now ?? Date.now;
  return {
    secret,
    store: options.store ?? new MemoryApprovalStore(options.now ? { now } : {}),
    nonces: options.nonces ?? new MemoryNonceStore(options.now ? { now } : {}),
    authenticate: options.authenticate ?? null,
    approvers,
    webhooks: webhooksOf(options.webhooks),
    base,
    publicUrl,
    loopbackOnly: false,
    ttlMs: positive(options.ttlMs, 'ttlMs', 15 * 60_000),
    sessionTtlMs: positive(options.sessionTtlMs, 'sessionTtlMs', 8 * 3_600_000),
    policyVersion: options.policyVersion ?? null,
    audit: options.audit ?? null,
    cards: cardsOf(options.cards),
    reminders: remindersOf(options.reminders),
    retryDelays: options.retryDelaysMs,
    now,
  };
}

/** The inbox's root as a link: the public URL when known, else the base path; always with its trailing slash. */
export function rootUrl(ctx: InboxContext): string {
  return `${ctx.publicUrl ?? ctx.base}/`;
}

/** Whether the inbox is published over https (then its session cookie is `Secure`, whatever the hop behind a proxy). */
export function publishedOverTls(ctx: InboxContext, requestUrl: string): boolean {
  if (ctx.publicUrl !== null) return ctx.publicUrl.startsWith('https:');
  return new URL(requestUrl).protocol === 'https:';
}

/** What `link()` takes. */
export interface LinkRequest {
  readonly approver: string;
  /** The tenants the link acts for (null or absent: not bound to a tenant). */
  readonly tenants?: readonly string[] | null;
  readonly approval?: string;
  readonly effect?: 'allow' | 'deny';
  readonly ttlMs?: number;
  readonly expiresAt?: number;
}

/** A signed, expiring, single-use link (see `Inbox.link`). */
export function signLink(ctx: InboxContext, claims: LinkRequest): string {
  if (typeof claims?.approver !== 'string' || claims.approver === '')
    throw new TypeError(`link(): "approver" must be a non-empty string, got ${describe(claims?.approver)}`);
  if (
    claims.tenants !== undefined &&
    claims.tenants !== null &&
    (!Array.isArray(claims.tenants) || claims.tenants.some((t) => typeof t !== 'string'))
  )
    throw new TypeError(`link(): "tenants" must be a list of tenant ids or null, got ${describe(claims.tenants)}`);
  const full: LinkClaims = {
    approver: claims.approver,
    ...(claims.tenants ? { tenants: [...claims.tenants] } : {}),
    ...(claims.approval !== undefined ? { approval: claims.approval } : {}),
    ...(claims.effect !== undefined ? { effect: claims.effect } : {}),
    expiresAt: claims.expiresAt ?? ctx.now() + (claims.ttlMs ?? ctx.ttlMs),
    nonce: randomUUID(),
  };
  const token = signValue(ctx.secret, 'toolgate.inbox.link', full);
  return `${ctx.publicUrl ?? ctx.base}/link?token=${encodeURIComponent(token)}`;
}

/**
 * Writes one audit record (nothing without an audit sink). A write that throws is retried twice (a remote
 * audit store's hiccup), then the error is thrown to the caller.
 */
export async function writeAudit(
  ctx: InboxContext,
  type: InboxAuditRecord['type'],
  approvalId: string,
  record: PendingRecord | undefined,
  answer: Answer | null,
  via: InboxAuditRecord['via'],
  refusal: string | null = null,
  outcome: InboxAuditRecord['outcome'] = null,
): Promise<void> {
  if (!ctx.audit) return;
  const entry: InboxAuditRecord = {
    type,
    at: ctx.now(),
    approvalId,
    approver: answer?.approver ?? null,
    via,
    tool: record?.canonical ?? null,
    tenant: record?.tenant ?? null,
    caller: record?.caller ?? null,
    runId: record?.runId ?? null,
    effect: answer?.effect ?? null,
    remember: answer ? (answer.remember ?? 'once') : null,
    edited: answer?.arguments !== undefined,
    reason: refusal ?? answer?.reason ?? null,
    summary: record ? ctx.cards.summaryOf(record) : null,
    ...(type === 'approval_outcome' ? { outcome } : {}),
  };
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.audit.write(entry);
      return;
    } catch (error) {
      if (attempt >= 3) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}
