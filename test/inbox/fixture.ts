/**
 * A shop for the inbox tests: a refund tool that records each execution, a policy that asks for refunds
 * over 100 and forbids refunds over 1000, and a runner whose handler pauses every ask.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import {
  AgentRunner,
  PermissionPolicy,
  PermissionResult,
  ToolRegistry,
  defineTool,
  type Agent,
  type RunResult,
} from '../../src/index.js';
import { ScriptedModel } from '../../src/runner/index.js';
import { runServe } from '../../src/cli/serve.js';
import { createInbox, jwtApprover, type Inbox } from '../../src/inbox/index.js';
import type { ApprovalRequest } from '../../src/stores/types.js';

export const RUNNER_SECRET = 'runner-secret-for-the-inbox-tests';
export const INBOX_SECRET = 'inbox-secret-for-the-inbox-tests!';
export const JWT_SECRET = 'jwt-secret-for-the-inbox-tests-0123456789';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const concierge: Agent = { name: 'concierge', tools: ['refund', 'search'] };

export interface Shop {
  readonly registry: ToolRegistry;
  readonly runner: AgentRunner;
  readonly model: ScriptedModel;
  /** Every refund executed, as `order:amount`. */
  readonly refunds: string[];
  run(args: Record<string, unknown>, caller?: string, runId?: string): Promise<RunResult>;
  /** The tool message the model was shown after the pause (its second request's last message). */
  lastToolMessage(): string;
}

export function shop(version = 'shop-1'): Shop {
  const refunds: string[] = [];
  const registry = new ToolRegistry();
  registry.register(
    defineTool({
      name: 'refund',
      description: 'Refund an order',
      parameters: {
        type: 'object',
        properties: { order: { type: 'string' }, amount: { type: 'number' }, note: { type: 'string' } },
        required: ['order', 'amount'],
      },
      execute: (a) => {
        refunds.push(`${String(a['order'])}:${String(a['amount'])}`);
        return `refunded ${String(a['amount'])} on ${String(a['order'])}`;
      },
    }),
  );
  registry.register(
    defineTool({
      name: 'search',
      description: 'Search',
      parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      execute: () => 'found',
    }),
  );
  registry.setPermissionPolicy(
    new PermissionPolicy({
      version,
      rules: [
        {
          name: 'deny_huge_refunds',
          tools: ['refund'],
          match: (_t, p) => Number(p['amount']) > 1000,
          result: PermissionResult.DENY,
          reason: 'refunds over 1000 are never made by an agent',
        },
        {
          name: 'ask_refunds_over_100',
          tools: ['refund'],
          match: (_t, p) => Number(p['amount']) > 100,
          result: PermissionResult.ASK,
          reason: 'refunds over 100 need a human',
        },
      ],
      fallback: PermissionResult.ALLOW,
    }),
  );
  let args: Record<string, unknown> = {};
  const model = new ScriptedModel([
    () => ({ toolCalls: [{ id: 'call_1', name: 'refund', arguments: args }] }),
    (r) => {
      const m = r.messages.filter((x) => x.role === 'tool').at(-1) as { content: string } | undefined;
      return { text: `done: ${m?.content ?? ''}` };
    },
  ]);
  const runner = new AgentRunner({ registry, model, secret: RUNNER_SECRET, handler: () => 'pending' });
  return {
    registry,
    runner,
    model,
    refunds,
    run: (a, caller = 'cy', runId) => {
      args = a;
      return runner.run(concierge, 'refund please', {
        tenant: 'acme',
        caller: { id: caller },
        ...(runId !== undefined ? { runId } : {}),
      });
    },
    lastToolMessage: () => {
      const request = model.requests.at(-1);
      const m = request?.messages.filter((x) => x.role === 'tool').at(-1) as { content: string } | undefined;
      return m?.content ?? '';
    },
  };
}

/** A registry whose `wire_money` tool every call asks a person about (the registry route); `ran` holds each executed call's arguments. */
export function wireMoney(): { registry: ToolRegistry; ran: unknown[] } {
  const ran: unknown[] = [];
  const registry = new ToolRegistry();
  registry.register(
    defineTool({
      name: 'wire_money',
      description: 'Wire money',
      parameters: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
      execute: (a) => {
        ran.push(a);
        return 'sent';
      },
    }),
  );
  registry.setPermissionPolicy(
    new PermissionPolicy({ rules: [{ name: 'ask_wires', tools: ['wire_money'], result: PermissionResult.ASK }] }),
  );
  return { registry, ran };
}

/** A JWT under the tests' key with exactly `claims` (and `sub`, an hour to live). */
export async function signJwt(claims: Record<string, unknown>, subject = 'user-7'): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(subject)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(JWT_SECRET));
}

/** A bearer token naming `subject` by a verified email. */
export async function bearer(subject: string): Promise<string> {
  return signJwt({ email: subject, email_verified: true }, subject);
}

/** The CSRF token of the inbox page as `who` sees it. */
export async function csrfOf(url: string, who: string): Promise<string> {
  const page = await (await fetch(`${url}/`, { headers: { authorization: `Bearer ${await bearer(who)}` } })).text();
  return /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
}

/** Answers approval `id` as `who` the way the inbox page's form does (bearer sign-in, CSRF token from the page unless given, same Origin). */
export async function answer(
  url: string,
  id: string,
  who: string,
  form: Record<string, string>,
  token?: string,
): Promise<Response> {
  const csrf = token ?? (await csrfOf(url, who));
  return fetch(`${url}/approvals/${encodeURIComponent(id)}/answer`, {
    method: 'POST',
    headers: { authorization: `Bearer ${await bearer(who)}`, origin: new URL(url).origin },
    body: new URLSearchParams({ csrf, ...form }),
  });
}

/** {@link answer}'s HTTP status. */
export async function answerAs(url: string, id: string, who: string, form: Record<string, string>): Promise<number> {
  return (await answer(url, id, who, form)).status;
}

export type Cleanup = () => unknown;

/** What {@link startInbox} passes to createInbox on top of the tests' secret, sign-in and no sweeps. */
export type InboxOptions = Partial<Parameters<typeof createInbox>[0]>;

/** An inbox on loopback signed in by JWT bearer (the tests' secret), closed by `cleanups`. */
export async function startInbox(
  cleanups: Cleanup[],
  options: InboxOptions = {},
): Promise<{ inbox: Inbox; url: string }> {
  const inbox = createInbox({
    secret: INBOX_SECRET,
    authenticate: jwtApprover({ secret: JWT_SECRET }),
    sweepIntervalMs: 0,
    ...options,
  });
  const server = await inbox.listen();
  cleanups.push(async () => {
    inbox.close();
    await server.close();
  });
  return { inbox, url: server.url };
}

/** A webhook receiver on loopback: records each request's headers and raw body; answers `statuses` in turn, then 200. */
export async function receiver(statuses: number[] = []): Promise<{
  readonly url: string;
  readonly received: { headers: IncomingMessage['headers']; body: string }[];
  next(): Promise<{ headers: IncomingMessage['headers']; body: string }>;
  close(): Promise<void>;
}> {
  const received: { headers: IncomingMessage['headers']; body: string }[] = [];
  const waiters: ((r: { headers: IncomingMessage['headers']; body: string }) => void)[] = [];
  let served = 0;
  let taken = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const status = statuses[served++] ?? 200;
      res.writeHead(status).end();
      if (status >= 200 && status < 300) {
        const entry = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        received.push(entry);
        const waiter = waiters.shift();
        if (waiter) {
          taken++;
          waiter(entry);
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    next: () =>
      new Promise((resolve) => {
        if (taken < received.length) resolve(received[taken++]!);
        else waiters.push(resolve);
      }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * `toolgate serve` in this process (runServe) with `args` after `--port 0`, the tests' inbox secret and
 * `JWT` (the tests' JWT key) in its environment; resolves with its address and what it wrote once it
 * listens, or with its exit code when it stops first. Stopped by `cleanups`.
 */
export async function serveInbox(
  cleanups: Cleanup[],
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<{ url: string | null; code: number | null; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  let stop!: () => void;
  let listening!: (url: string) => void;
  const up = new Promise<string>((resolve) => (listening = resolve));
  const exited = runServe(['--port', '0', ...args], {
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    stop: new Promise<void>((resolve) => (stop = resolve)),
    onListening: (url) => listening(url),
    env: { TOOLGATE_INBOX_SECRET: INBOX_SECRET, JWT: JWT_SECRET, ...env },
  });
  const first = await Promise.race([exited.then((code) => ({ code })), up.then((url) => ({ url }))]);
  if ('code' in first) return { url: null, code: first.code, out, err };
  cleanups.push(async () => {
    stop();
    await exited;
  });
  return { url: first.url, code: null, out, err };
}

/** A request as a route of its own puts it to `inbox.ask` (the gateway's shape): a tool call of `tenant`'s `caller`. */
export function approvalRequest(request: {
  readonly id: string;
  readonly tool: string;
  readonly canonical?: string;
  readonly tenant: string | null;
  readonly caller?: string;
  readonly agent?: string;
  readonly rule?: string;
  readonly parameters?: Record<string, unknown>;
  readonly policyVersion?: string | null;
  readonly ttlMs?: number;
}): ApprovalRequest {
  const canonical = request.canonical ?? request.tool;
  const caller = request.caller ?? 'cy';
  const rule = request.rule ?? 'ask_all';
  return {
    id: request.id,
    kind: 'tool',
    binding: {
      kind: 'tool',
      owner: { kind: 'session', id: caller },
      agent: request.agent ?? 'concierge',
      callId: request.id,
      tool: canonical,
      argsHash: `h-${request.id}`,
      rule,
      policyVersion: request.policyVersion ?? null,
      pin: null,
      caller,
      tenant: request.tenant,
      expiresAt: Date.now() + (request.ttlMs ?? 600_000),
      nonce: `n-${request.id}`,
    },
    toolName: request.tool,
    canonical,
    parameters: request.parameters ?? {},
    agent: request.agent ?? 'concierge',
    tenant: request.tenant,
    caller,
    runId: null,
    rule,
    reason: 'asks',
  };
}
