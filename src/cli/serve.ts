/**
 * `toolgate serve`: the approval inbox as a server of its own. Parses its own arguments (loaded with
 * import() only when used, so other commands never load Hono). Secrets come from environment variables,
 * never from the command line.
 */
import { parseArgs } from 'node:util';
import type { Command } from 'commander';
import { canonical } from '../names.js';
import type { PolicyCards } from '../policy-file/load.js';
import type { PolicyApprovalsData } from '../policy-file/types.js';
import type { ApprovalStore, Ledger, NonceStore } from '../stores/types.js';
import { EXIT, exitCodesText } from './exit-codes.js';

/** What `runServe` writes to and when it stops. */
export interface ServeIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Resolves to stop the server. @default SIGINT / SIGTERM */
  readonly stop?: Promise<void>;
  /** Called once the server listens (tests). */
  readonly onListening?: (url: string) => void;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export const SERVE_HELP = `Usage: toolgate serve [options]

Serve the approval inbox: people see pending approvals and approve, deny or edit them.

Options:
  --port <n>                 port (default 8080; 0 picks a free one)
  --host <addr>              address to listen on (default 127.0.0.1)
  --store <where>            the approval store: sqlite:<file> (default sqlite:toolgate-approvals.db),
                             postgres://… (shared by every worker), or memory
  --policy <file>            policy file: its "approvals" section names approvers, four eyes, the
                             time-out, reminders and escalation; tools' "summary" and "risk" and rules'
                             "risk" shape the cards; answers given under another policy version are refused
  --audit <where>            the audit log the "Answered" view reads: sqlite:<file> or postgres://…
                             (default: the --store's database; with --store memory, none)
  --base-path <path>         mount path, e.g. /approvals (default: the root)
  --public-url <url>         the inbox's public URL, for links in webhooks
  --secret-env <name>        env variable with the inbox's HMAC key (default TOOLGATE_INBOX_SECRET)
  --jwt-secret-env <name>    env variable with an HS256 key: bearer JWTs sign approvers in
  --jwks-url <url>           a JWKS URL (OIDC): bearer ID tokens sign approvers in
  --issuer <iss>             the required "iss" of bearer tokens (required with --jwks-url)
  --audience <aud>           the required "aud" of bearer tokens (required with --jwks-url)
  --any-audience             with --jwks-url: accept an ID token minted for any application of the
                             identity provider (not recommended; a warning is printed)
  --claim <name>             the claim naming the approver (default: email, then sub); "email" names
                             an approver only when email_verified is true
  --tenant-claim <name>      the claim holding the approver's tenant(s): they see only those tenants' requests
  --webhook <tenant=url>     a JSON webhook for a tenant ("*" for all); repeatable
  --slack-webhook <tenant=url>  a Slack-compatible webhook for a tenant; repeatable
  --webhook-secret-env <name>   env variable with the webhooks' HMAC key (default TOOLGATE_WEBHOOK_SECRET)
  --sign-in <approver>       print a single-use sign-in link for this approver
  -h, --help                 show this help

Approvals reach the store from the processes whose runs wait (createInbox over the same store); the
inbox shows them and records the answers, which those processes pick up.
${exitCodesText([
  [EXIT.OK, 'stopped (^C, SIGTERM)'],
  [
    EXIT.USAGE,
    'usage or configuration error: a bad option, a missing secret, a policy file or store that could not be opened',
  ],
])}`;

class ServeError extends Error {}

function env(io: ServeIO, name: string): string | undefined {
  return (io.env ?? process.env)[name];
}

function pairs(values: readonly string[] | undefined, flag: string): [string, string][] {
  return (values ?? []).map((v) => {
    const eq = v.indexOf('=');
    if (eq <= 0) throw new ServeError(`${flag} expects tenant=url, got ${JSON.stringify(v)}`);
    return [v.slice(0, eq), v.slice(eq + 1)];
  });
}

export interface OpenedStore {
  readonly approvals?: ApprovalStore;
  readonly nonces?: NonceStore;
  readonly ledger?: Ledger;
  close(): Promise<void> | void;
}

/** The store named by --store (the drivers are loaded only for the store asked for). */
export async function openStore(where: string): Promise<OpenedStore> {
  if (where === 'memory') return { close: () => undefined };
  if (where.startsWith('sqlite:')) {
    const file = where.slice('sqlite:'.length);
    if (file === '') throw new ServeError('--store sqlite: needs a file name, e.g. sqlite:approvals.db');
    const { SqliteStores } = await import('../stores/sqlite.js');
    const stores = new SqliteStores({ filename: file });
    return { approvals: stores.approvals, nonces: stores.nonces, ledger: stores.ledger, close: () => stores.close() };
  }
  if (where.startsWith('postgres://') || where.startsWith('postgresql://')) {
    const { PostgresStores } = await import('../stores/postgres.js');
    const stores = new PostgresStores({ connectionString: where });
    await stores.migrate();
    return { approvals: stores.approvals, nonces: stores.nonces, ledger: stores.ledger, close: () => stores.close() };
  }
  throw new ServeError(`--store must be sqlite:<file>, postgres://… or memory, got ${JSON.stringify(where)}`);
}

/** Runs `toolgate serve` with `argv` (the words after `serve`); resolves with the exit code. */
export async function runServe(argv: readonly string[], io: ServeIO): Promise<number> {
  let values;
  try {
    values = parseArgs({
      args: [...argv],
      allowPositionals: false,
      options: {
        port: { type: 'string' },
        store: { type: 'string' },
        host: { type: 'string' },
        policy: { type: 'string' },
        audit: { type: 'string' },
        'base-path': { type: 'string' },
        'public-url': { type: 'string' },
        'secret-env': { type: 'string' },
        'jwt-secret-env': { type: 'string' },
        'jwks-url': { type: 'string' },
        issuer: { type: 'string' },
        audience: { type: 'string' },
        'any-audience': { type: 'boolean' },
        claim: { type: 'string' },
        'tenant-claim': { type: 'string' },
        webhook: { type: 'string', multiple: true },
        'slack-webhook': { type: 'string', multiple: true },
        'webhook-secret-env': { type: 'string' },
        'sign-in': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (error) {
    io.stderr(`toolgate serve: ${(error as Error).message}\n(run with --help for usage)\n`);
    return 2;
  }
  if (values.help) {
    io.stdout(`${SERVE_HELP}\n`);
    return 0;
  }
  try {
    const { createInbox, jwtApprover, openInboxAudit } = await import('../inbox/index.js');
    const secretName = values['secret-env'] ?? 'TOOLGATE_INBOX_SECRET';
    const secret = env(io, secretName);
    if (!secret || Buffer.byteLength(secret) < 16)
      throw new ServeError(
        `set ${secretName} to a key of at least 16 bytes (the inbox signs links and sessions with it)`,
      );
    const port = values.port === undefined ? 8080 : Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new ServeError(`--port must be a port number, got ${JSON.stringify(values.port)}`);

    let approvals: PolicyApprovalsData | undefined;
    let policyVersion: (() => string | null) | undefined;
    let cards: PolicyCards | undefined;
    if (values.policy !== undefined) {
      const { loadPolicyFile, policyCards } = await import('../policy-file/load.js');
      const set = await loadPolicyFile(values.policy);
      approvals = set.data.approvals;
      cards = policyCards(set.data);
      const version = set.policy.version ?? null;
      policyVersion = () => version;
    }
    let authenticate;
    if (values['jwt-secret-env'] !== undefined || values['jwks-url'] !== undefined) {
      const key = values['jwt-secret-env'] !== undefined ? env(io, values['jwt-secret-env']) : undefined;
      if (values['jwt-secret-env'] !== undefined && !key)
        throw new ServeError(`${values['jwt-secret-env']} is not set`);
      if (values['jwks-url'] !== undefined && key === undefined) {
        // An identity provider's keys sign the ID tokens of every application it serves: without an audience,
        // a token minted for another application (signed in as anyone) would sign an approver in here.
        if (values.audience === undefined && !values['any-audience'])
          throw new ServeError(
            '--jwks-url needs --audience (the client id the ID tokens are minted for) and --issuer, or --any-audience to accept a token minted for any application',
          );
        if (values.issuer === undefined)
          throw new ServeError('--jwks-url needs --issuer (the identity provider whose tokens sign approvers in)');
        if (values.audience === undefined)
          io.stderr(
            'toolgate serve: warning: accepting ID tokens for any audience (--any-audience): a token the identity provider minted for another application signs an approver in\n',
          );
      }
      if (values.audience !== undefined && values['any-audience'])
        throw new ServeError('give --audience or --any-audience, not both');
      authenticate = jwtApprover({
        ...(key !== undefined ? { secret: key } : { jwksUrl: values['jwks-url']! }),
        ...(values.issuer !== undefined ? { issuer: values.issuer } : {}),
        ...(values.audience !== undefined ? { audience: values.audience } : {}),
        ...(values.claim !== undefined ? { claim: values.claim } : {}),
        ...(values['tenant-claim'] !== undefined ? { tenantClaim: values['tenant-claim'] } : {}),
      });
    }
    const hookSecretName = values['webhook-secret-env'] ?? 'TOOLGATE_WEBHOOK_SECRET';
    const hooks = [
      ...pairs(values.webhook, '--webhook').map(([t, url]) => [t, url, 'json'] as const),
      ...pairs(values['slack-webhook'], '--slack-webhook').map(([t, url]) => [t, url, 'slack'] as const),
    ];
    const hookSecret = hooks.length > 0 ? env(io, hookSecretName) : undefined;
    if (hooks.length > 0 && (!hookSecret || Buffer.byteLength(hookSecret) < 16))
      throw new ServeError(`set ${hookSecretName} to a key of at least 16 bytes (webhooks are signed with it)`);
    const webhooks: Record<string, { url: string; secret: string; format: 'json' | 'slack' }[]> = {};
    for (const [tenant, url, format] of hooks) (webhooks[tenant] ??= []).push({ url, secret: hookSecret!, format });
    const canonicalKeys = (map: Readonly<Record<string, readonly string[]>> | undefined) =>
      map && Object.fromEntries(Object.entries(map).map(([k, v]) => [canonical(k), v]));
    const where = values.store ?? 'sqlite:toolgate-approvals.db';
    const store = await openStore(where);
    const auditWhere = values.audit ?? (where === 'memory' ? undefined : where);
    const log =
      auditWhere !== undefined
        ? await openInboxAudit(auditWhere).catch(async (error: unknown) => {
            await store.close();
            throw new ServeError(`--audit ${auditWhere}: ${error instanceof Error ? error.message : String(error)}`);
          })
        : undefined;
    const reminders =
      approvals?.remindBeforeSeconds !== undefined
        ? {
            beforeExpiryMs: approvals.remindBeforeSeconds * 1000,
            ...(approvals.escalateTo?.length ? { escalateTo: approvals.escalateTo } : {}),
          }
        : undefined;
    const inbox = createInbox({
      secret,
      ...(store.approvals ? { store: store.approvals, nonces: store.nonces } : {}),
      ...(authenticate ? { authenticate } : {}),
      ...(approvals
        ? {
            approvers: {
              ...(approvals.approvers?.tenants ? { tenants: approvals.approvers.tenants } : {}),
              ...(approvals.approvers?.tools ? { tools: canonicalKeys(approvals.approvers.tools)! } : {}),
              ...(approvals.fourEyes !== undefined ? { fourEyes: approvals.fourEyes } : {}),
            },
          }
        : {}),
      ...(approvals?.timeoutSeconds !== undefined ? { ttlMs: approvals.timeoutSeconds * 1000 } : {}),
      ...(policyVersion ? { policyVersion } : {}),
      ...(hooks.length > 0 ? { webhooks } : {}),
      ...(values['base-path'] !== undefined ? { basePath: values['base-path'] } : {}),
      ...(values['public-url'] !== undefined ? { publicUrl: values['public-url'] } : {}),
      ...(cards ? { cards } : {}),
      ...(reminders ? { reminders } : {}),
      audit: {
        write: async (record) => {
          io.stdout(`${JSON.stringify(record)}\n`);
          await log?.write(record);
        },
        ...(log ? { read: (query) => log.read(query) } : {}),
      },
    });
    const server = await inbox.listen({ port, host: values.host ?? '127.0.0.1' });
    io.stderr(`toolgate inbox on ${server.url}/\n`);
    if (values['sign-in'] !== undefined)
      io.stderr(`sign-in link for ${values['sign-in']} (single use): ${inbox.link({ approver: values['sign-in'] })}\n`);
    io.onListening?.(server.url);
    await (io.stop ??
      new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      }));
    inbox.close();
    await server.close();
    await store.close();
    await log?.close();
    return 0;
  } catch (error) {
    io.stderr(`toolgate serve: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
}

/** What `registerServe` needs of the CLI (the program's Cli fits). */
export interface ServeCli {
  readonly argv: readonly string[];
  readonly io: Pick<ServeIO, 'stdout' | 'stderr' | 'stop'>;
  exit(code: number): void;
}

/** Registers `toolgate serve` (it parses its own arguments, --help included). */
export function registerServe(program: Command, cli: ServeCli): void {
  program
    .command('serve')
    .description('Serve the approval inbox (see toolgate serve --help).')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async () => {
      cli.exit(await runServe(cli.argv.slice(cli.argv.indexOf('serve') + 1), cli.io));
    });
}
