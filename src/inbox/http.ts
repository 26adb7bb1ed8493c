/**
 * The inbox over HTTP (a Hono app): pages, the live stream, forms and signed links. Every request that
 * names an approval asks {@link Answering} for it, so what the approver may not see is a 404 here too;
 * every POST needs the published Origin and (but the link's own) the CSRF token of the session.
 */
import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { streamSSE } from 'hono/streaming';
import { INBOX_CSS, INBOX_JS } from './assets.js';
import { csrfToken, identityOf, linkClaims, sameCsrf, sessionOf, signValue } from './auth.js';
import { consumeNonce } from '../gate/index.js';
import { STATUS, parseArguments, type Answering, type Outcome, type Status } from './answer.js';
import { publishedOverTls, type InboxContext, type InboxIdentity } from './context.js';
import type { History } from './history.js';
import type { PendingRecord } from '../stores/types.js';
import type { ApprovalQueue } from './queue.js';
import { historyHtml, listHtml, listQuery, type ListQuery } from './pages.js';
import { editReviewHtml, escapeHtml, layout, linkHtml, messageHtml, type PageContext } from './render.js';

const SESSION_COOKIE = 'toolgate_inbox';

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** What the HTTP layer is built from. */
export interface InboxParts {
  readonly ctx: InboxContext;
  readonly queue: ApprovalQueue;
  readonly answering: Answering;
  readonly history: History;
}

/** The inbox's Hono app, mounted at the base path (with and without its trailing slash). */
export function inboxApp({ ctx, queue, answering, history }: InboxParts): Hono {
  // Not strict: `/approvals` and `/approvals/` are the one root (every link the inbox makes ends in `/`).
  const app = new Hono({ strict: false }).basePath(ctx.base || '/');

  const identity = async (c: Context): Promise<InboxIdentity | null> => {
    const header = c.req.header('authorization');
    if (header !== undefined) {
      const match = /^Bearer\s+(\S+)$/i.exec(header);
      if (!match || !ctx.authenticate) return null;
      try {
        const who = identityOf(await ctx.authenticate(match[1]!));
        return who ? { ...who, via: 'bearer', csrfKey: `bearer:${who.id}` } : null;
      } catch {
        return null;
      }
    }
    const session = sessionOf(ctx.secret, getCookie(c, SESSION_COOKIE), ctx.now());
    return session
      ? { id: session.approver, tenants: session.tenants, via: 'session', csrfKey: `session:${session.id}` }
      : null;
  };

  const page = (who: { readonly id: string; readonly csrfKey?: string } | null): PageContext => ({
    base: ctx.base,
    approver: who?.id ?? null,
    csrf: who?.csrfKey ? csrfToken(ctx.secret, who.csrfKey) : '',
    now: ctx.now(),
    cards: ctx.cards,
  });

  /** A cross-site form post is refused: the Origin (or Sec-Fetch-Site) must say the inbox itself. */
  const sameOrigin = (c: Context): boolean => {
    const site = c.req.header('sec-fetch-site');
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
    const origin = c.req.header('origin');
    if (origin === undefined) return true;
    // The published origin when there is one (the Host header is the client's to choose: DNS rebinding).
    return origin === (ctx.publicUrl ? new URL(ctx.publicUrl).origin : new URL(c.req.url).origin);
  };

  const html = (c: Context, who: InboxIdentity | null, title: string, body: string, status: Status = 200) =>
    c.html(layout(page(who), title, body), status);
  const message = (c: Context, who: InboxIdentity | null, outcome: Outcome) => {
    // Answered from the list by its script: the outcome as JSON, and the list refreshes itself.
    if (c.req.header('x-toolgate-inbox') === 'in-place') return c.json(outcome, outcome.status);
    return html(
      c,
      who,
      outcome.title,
      messageHtml(page(who), outcome.title, outcome.detail, outcome.status === 200 ? 'ok' : 'error'),
      outcome.status,
    );
  };
  const refused = (c: Context, who: InboxIdentity | null, detail: string) =>
    message(c, who, { status: STATUS.forbidden, title: 'Refused', detail });
  const signIn = (c: Context) =>
    html(
      c,
      null,
      'Sign in',
      messageHtml(
        page(null),
        'Sign in to answer approvals',
        'Open a signed link you were sent, or send a bearer token (OIDC / JWT) with your requests.',
        'error',
      ),
      STATUS.unauthorized,
    );
  const listOf = (who: InboxIdentity, records: readonly PendingRecord[], query: ListQuery) =>
    listHtml(
      page(who),
      records,
      (id) => queue.outcome(id),
      query,
      (r) => answering.verdict(who, r),
    );

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
    if (ctx.loopbackOnly) {
      const host = (c.req.header('host') ?? '').replace(/:\d+$/, '').toLowerCase();
      if (host !== '127.0.0.1' && host !== 'localhost' && host !== '[::1]') return c.text('unknown host', 421);
    }
    return next();
  });
  app.use('*', bodyLimit({ maxSize: 256 * 1024, onError: (c) => c.text('the request body is too large', 413) }));
  app.onError((error, c) =>
    c.html(layout(page(null), 'Error', messageHtml(page(null), 'Something failed', error.message, 'error')), 500),
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
    const who = await identity(c);
    if (!who) return signIn(c);
    const records = await answering.visible(who);
    const waiting = records.filter((r) => r.status === 'pending').length;
    return html(c, who, `Approvals (${waiting})`, listOf(who, records, listQuery(c.req.query())));
  });

  app.get('/fragment', async (c) => {
    const who = await identity(c);
    if (!who) return c.text('sign in', STATUS.unauthorized);
    return c.html(listOf(who, await answering.visible(who), listQuery(c.req.query())));
  });

  app.get('/history', async (c) => {
    const who = await identity(c);
    if (!who) return signIn(c);
    const before = c.req.query('before');
    const entries = await history.read(who, before !== undefined && /^\d{1,16}$/.test(before) ? before : undefined);
    return html(c, who, 'Answered', historyHtml(page(who), entries));
  });

  app.get('/events', async (c) => {
    const who = await identity(c);
    if (!who) return c.text('sign in', STATUS.unauthorized);
    return streamSSE(c, async (stream) => {
      let wake: (() => void) | null = null;
      const changed = new Set<string>();
      const stop = queue.onChange((id) => {
        changed.add(id);
        wake?.();
      });
      stream.onAbort(() => {
        stop();
        wake?.();
      });
      // `ready` on every (re)connect: the page refreshes then, so what changed while it was away shows.
      await stream.writeSSE({ event: 'ready', data: '', retry: 2000 });
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
        // Only what this approver may see: another tenant's ids are not theirs to know.
        const mine: string[] = [];
        for (const id of ids) if (await answering.find(who, id).catch(() => undefined)) mine.push(id);
        if (mine.length > 0) await stream.writeSSE({ event: 'changed', data: JSON.stringify(mine) });
      }
      stop();
    });
  });

  app.post('/approvals/:id/answer', async (c) => {
    const who = await identity(c);
    if (!who) return signIn(c);
    const form = await c.req.parseBody();
    if (!sameOrigin(c) || !sameCsrf(ctx.secret, who.csrfKey, form['csrf']))
      return refused(c, who, 'The form did not come from this inbox (CSRF check failed).');
    return message(c, who, await answering.answer(c.req.param('id'), who, form, null));
  });

  app.post('/approvals/:id/edit', async (c) => {
    const who = await identity(c);
    if (!who) return signIn(c);
    const form = await c.req.parseBody();
    if (!sameOrigin(c) || !sameCsrf(ctx.secret, who.csrfKey, form['csrf']))
      return refused(c, who, 'CSRF check failed.');
    const record = await answering.find(who, c.req.param('id'));
    if (!record)
      return message(c, who, {
        status: STATUS.missing,
        title: 'No such approval',
        detail: 'There is no approval with this id.',
      });
    if (record.status !== 'pending')
      return message(c, who, {
        status: STATUS.conflict,
        title: 'Not waiting',
        detail: 'This approval is no longer waiting.',
      });
    const parsed =
      typeof form['arguments'] === 'string' ? parseArguments(form['arguments']) : 'No arguments were given.';
    if (typeof parsed === 'string')
      return message(c, who, { status: STATUS.bad, title: 'Bad arguments', detail: parsed });
    const review = editReviewHtml(page(who), record, parsed);
    // Reviewed in place (the script shows it inside the card), or as a page of its own.
    if (c.req.header('x-toolgate-inbox') === 'in-place') return c.html(review);
    return html(c, who, 'Review the edited call', review);
  });

  app.get('/link', async (c) => {
    const token = c.req.query('token');
    const claims = linkClaims(ctx.secret, token, ctx.now());
    if (typeof claims === 'string')
      return message(c, null, { status: STATUS.forbidden, title: 'Link refused', detail: claims });
    const who: InboxIdentity = { id: claims.approver, tenants: claims.tenants ?? null, via: 'link', csrfKey: '' };
    if (claims.approval === undefined)
      return html(
        c,
        null,
        'Sign in',
        `<h2>Sign in as ${escapeHtml(claims.approver)}?</h2><form method="post" action="${escapeHtml(ctx.base)}/link"><input type="hidden" name="token" value="${escapeHtml(token ?? '')}"><div class="buttons"><button type="submit">Sign in</button></div></form>`,
      );
    const record = await answering.find(who, claims.approval);
    if (!record)
      return message(c, null, {
        status: STATUS.missing,
        title: 'No such approval',
        detail: 'There is no approval with this id.',
      });
    const shown = page(who);
    return c.html(layout(shown, 'Answer an approval', linkHtml(shown, record, token ?? '', claims.effect ?? null)));
  });

  app.post('/link', async (c) => {
    const form = await c.req.parseBody();
    if (!sameOrigin(c)) return refused(c, null, 'The form did not come from this inbox.');
    const claims = linkClaims(ctx.secret, form['token'], ctx.now());
    if (typeof claims === 'string')
      return message(c, null, { status: STATUS.forbidden, title: 'Link refused', detail: claims });
    // Single use: the nonce is consumed before anything else happens. Only `true` is fresh: any other
    // answer of the store (`'OK'`, `1`) is a store error and refuses the link (the error page, status 500).
    if (!(await consumeNonce(ctx.nonces, claims.nonce, claims.expiresAt - ctx.now())))
      return message(c, null, {
        status: STATUS.gone,
        title: 'Link already used',
        detail: 'This link was already used; it works once.',
      });
    if (claims.approval === undefined) {
      const session = signValue(ctx.secret, 'toolgate.inbox.session', {
        approver: claims.approver,
        ...(claims.tenants ? { tenants: claims.tenants } : {}),
        expiresAt: Math.min(claims.expiresAt + ctx.sessionTtlMs, ctx.now() + ctx.sessionTtlMs),
        id: randomUUID(),
      });
      setCookie(c, SESSION_COOKIE, session, {
        httpOnly: true,
        sameSite: 'Strict',
        path: ctx.base || '/',
        // Behind a TLS proxy the hop to the inbox is plain http: the published URL says what the browser sees.
        secure: publishedOverTls(ctx, c.req.url),
        maxAge: Math.floor(ctx.sessionTtlMs / 1000),
      });
      return c.redirect(`${ctx.base}/`, 303);
    }
    const who: InboxIdentity = { id: claims.approver, tenants: claims.tenants ?? null, via: 'link', csrfKey: '' };
    // A link answers the call it shows: once, and without edits.
    const outcome = await answering.answer(
      claims.approval,
      who,
      { effect: form['effect'], reason: form['reason'], remember: 'once' },
      claims.effect ?? null,
    );
    const shown = page(who);
    return c.html(
      layout(
        shown,
        outcome.title,
        messageHtml(shown, outcome.title, outcome.detail, outcome.status === 200 ? 'ok' : 'error'),
      ),
      outcome.status,
    );
  });

  app.post('/logout', async (c) => {
    const who = await identity(c);
    const form = await c.req.parseBody();
    if (who && sameOrigin(c) && sameCsrf(ctx.secret, who.csrfKey, form['csrf']))
      deleteCookie(c, SESSION_COOKIE, { path: ctx.base || '/' });
    return c.redirect(`${ctx.base}/`, 303);
  });
  return app;
}
