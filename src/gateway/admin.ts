/**
 * The admin API (`--admin-scope <scope>`; off without it), for a verified token carrying that scope:
 *
 *   GET  /admin/upstreams            every upstream: state, reason when not ready, its tools
 *   GET  /admin/pins                 the lock file: pinned tools, and the drifted ones with their diff
 *   POST /admin/pins/<tool>/accept   make a drifted definition the pinned one (`toolgate pin --accept`)
 *   POST /admin/reload               reload the policy file, as SIGHUP does (a broken file keeps the policy in force, 409 saying why)
 *   POST /admin/drain                stop taking new calls (503), answer once the running ones have finished
 *
 * Every action, listing included, is an `admin` audit record naming who did it and how it ended. A caller
 * without the scope never gets here (http.ts: 403 and an `access` record). Nothing here lets a call
 * through: an error answers 500 and changes nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { reply } from './auth.js';
import type { AdminAuditRecord, GatewayAuditRecord } from './audit.js';
import type { Gateway } from './gateway.js';
import type { AdminEndpoint } from './http.js';
import { definitionDiff, PinStore } from './pins.js';
import { canonical } from '../names.js';
import { parseJsonText } from '../json-text.js';
import type { GatewayReloadResult } from './reload.js';

/** What the admin API acts on. */
export interface AdminDeps {
  readonly scope: string;
  readonly gateway: Pick<Gateway, 'upstreams' | 'policy'>;
  /** The lock file of the policy in force, or null when pinning is off. */
  readonly lockFile: () => string | null;
  /** Reloads the policy file as SIGHUP does; `who` is the admin token's subject. */
  readonly reload: (who: string) => Promise<GatewayReloadResult>;
  readonly audit: (record: GatewayAuditRecord) => void;
}

/** The admin endpoint `serveGatewayHttp` serves under `/admin/`. */
export function adminApi(deps: AdminDeps): AdminEndpoint {
  return {
    scope: deps.scope,
    async handle(req: IncomingMessage, res: ServerResponse, pathname: string, who: string, control) {
      const done = (
        action: AdminAuditRecord['action'],
        status: number,
        body: Readonly<Record<string, unknown>>,
        detail: string,
      ): void => {
        deps.audit({ type: 'admin', time: new Date().toISOString(), by: who, action, ok: status < 400, detail });
        reply(res, status, body);
      };
      const method = req.method ?? 'GET';
      const wants = (m: string): boolean => {
        if (method === m) return true;
        reply(res, 405, { error: 'method_not_allowed', error_description: `${pathname} takes ${m}` });
        return false;
      };
      if (pathname === '/admin/upstreams') {
        if (!wants('GET')) return;
        const upstreams = [...deps.gateway.upstreams.values()].map((u) => ({
          namespace: u.namespace,
          state: u.state,
          ...(u.state === 'ready' ? {} : { reason: u.reason }),
          tools: [...(u.connection?.tools ?? [])],
        }));
        return done('list-upstreams', 200, { upstreams }, `${upstreams.length} upstreams`);
      }
      if (pathname === '/admin/pins') {
        if (!wants('GET')) return;
        const file = deps.lockFile();
        if (file === null)
          return done(
            'list-pins',
            409,
            { error: 'pinning_off', error_description: 'pinning is off (gateway.pin: off)' },
            'pinning is off',
          );
        const lock = new PinStore(file).lock;
        const drift = Object.entries(lock.drift ?? {}).map(([tool, offered]) => {
          const pinned = lock.tools[tool];
          return {
            tool,
            since: offered.at,
            // What an accept names: the definition reviewed here (a later drift is another one).
            sha256: offered.sha256,
            diff: pinned ? definitionDiff(tool, pinned.definition, offered.definition) : '(no pinned definition)',
          };
        });
        return done(
          'list-pins',
          200,
          { lock: file, pinned: Object.keys(lock.tools), drift },
          `${Object.keys(lock.tools).length} pinned, ${drift.length} drifted`,
        );
      }
      const accept = /^\/admin\/pins\/([^/]+)\/accept$/.exec(pathname);
      if (accept) {
        if (!wants('POST')) return;
        const tool = decodeURIComponent(accept[1]!);
        const file = deps.lockFile();
        if (file === null)
          return done(
            'accept-pin',
            409,
            { error: 'pinning_off', error_description: 'pinning is off (gateway.pin: off)' },
            `${tool}: pinning is off`,
          );
        // The accept names the definition the admin reviewed (GET /admin/pins): one that drifted again since
        // is not it, and is not accepted.
        const reviewed = await reviewedHash(req);
        const store = new PinStore(file);
        const form = canonical(tool);
        const changed = (recorded: string) =>
          done(
            'accept-pin',
            reviewed === null ? 400 : 409,
            {
              error: reviewed === null ? 'sha256_required' : 'definition_changed',
              error_description:
                reviewed === null
                  ? `name the definition you accept: a JSON body { "sha256": … } with the drift's sha256 from GET /admin/pins`
                  : `the drifted definition of ${JSON.stringify(tool)} is now ${recorded}, not the ${reviewed} given: review it again (GET /admin/pins)`,
            },
            `${tool}: ${reviewed === null ? 'no sha256 named' : 'the definition changed since it was reviewed'}`,
          );
        const drifted = store.lock.drift?.[form];
        if (drifted !== undefined && reviewed !== drifted.sha256) return changed(drifted.sha256);
        // Bound in the accept's own read too: a drift rewritten between the look above and it is not accepted (and
        // answered as above, with the drift that read saw), nor one recorded since (no sha256 named: '' matches no
        // drift; an empty map accepted it unbound, atk-accept).
        const { accepted, refused } = store.accept([tool], new Map([[form, reviewed ?? '']]));
        const recorded = refused[0]?.recorded;
        if (typeof recorded === 'string') return changed(recorded);
        if (accepted.length === 0)
          return done(
            'accept-pin',
            404,
            {
              error: 'not_drifted',
              error_description: `the tool ${JSON.stringify(tool)} has no drifted definition to accept`,
            },
            `${tool}: nothing to accept`,
          );
        return done('accept-pin', 200, { accepted }, `accepted ${accepted.join(', ')}`);
      }
      if (pathname === '/admin/reload') {
        if (!wants('POST')) return;
        const result = await deps.reload(who);
        if (result.ok)
          return done(
            'reload',
            200,
            { ok: true, version: result.version, changes: result.changes },
            `policy ${result.version} in force${result.changes.length > 0 ? `: ${result.changes.join('; ')}` : ', nothing changed'}`,
          );
        if (result.held)
          return done(
            'reload',
            202,
            { ok: false, held: true, version: result.version, approval: result.approval, error: result.error },
            `held: ${result.error} (approval ${result.approval})`,
          );
        return done(
          'reload',
          409,
          { ok: false, version: result.version, error: result.error },
          `refused; policy ${result.version} stays in force: ${result.error}`,
        );
      }
      if (pathname === '/admin/drain') {
        if (!wants('POST')) return;
        const running = control.inflight;
        deps.audit({
          type: 'admin',
          time: new Date().toISOString(),
          by: who,
          action: 'drain',
          ok: true,
          detail: `draining: ${running} calls running`,
        });
        await control.drain();
        return reply(res, 200, { drained: true, finished: running });
      }
      return reply(res, 404, { error: 'not_found' });
    },
  };
}

/** The `sha256` a pin accept names in its JSON body (at most 4 KiB), or null when it names none. */
async function reviewedHash(req: IncomingMessage): Promise<string | null> {
  let text = '';
  for await (const chunk of req) {
    text += (chunk as Buffer).toString('utf8');
    if (text.length > 4096) return null;
  }
  try {
    const sha256 = (parseJsonText(text) as { sha256?: unknown } | null)?.sha256;
    return typeof sha256 === 'string' && sha256 !== '' ? sha256 : null;
  } catch {
    return null;
  }
}
