/**
 * The stores a command reads or settles, chosen on the command line: `--postgres <url>` (with `--schema`),
 * `--sqlite <file>`, or `--redis <url>` (with `--redis-prefix`). The drivers are loaded only when their option
 * is used, and the stores are closed when the command is done. Times on the command line are ISO 8601 or a
 * duration ago (`15m`, `24h`, `7d`).
 */
import type { Command } from 'commander';
import type { AuditReader, Ledger } from '../stores/types.js';
import { UsageError } from './context.js';

/** What the store options give. */
export interface StoreOptions {
  readonly postgres?: string;
  readonly schema?: string;
  readonly sqlite?: string;
  readonly redis?: string;
  readonly redisPrefix?: string;
}

/** The stores one command works with: the ledger, and the audit trail where the backend keeps one. */
export interface OpenedStores {
  readonly ledger: Ledger;
  readonly audit: AuditReader | null;
}

/** Adds `--postgres`, `--schema`, `--sqlite` and (with `redis`) `--redis`, `--redis-prefix` to `command`. */
export function storeOptions(command: Command, redis: boolean): Command {
  command
    .option('--postgres <url>', 'the stores in a PostgreSQL database (postgres://…)')
    .option('--schema <name>', 'the PostgreSQL schema of the stores', 'toolgate')
    .option('--sqlite <file>', 'the stores in a SQLite file');
  if (redis)
    command
      .option('--redis <url>', 'the stores in Redis (redis://…)')
      .option('--redis-prefix <prefix>', 'the Redis key prefix of the deployment', 'toolgate');
  return command;
}

/**
 * Opens the one store `options` name (exactly one, else a usage error; a command that reads a file too passes
 * it as `file`, and it counts as one), runs `use`, and closes the stores.
 */
export async function withStores<T>(
  options: StoreOptions,
  use: (stores: OpenedStores) => Promise<T>,
  choices: { readonly file?: string | undefined; readonly files: boolean; readonly redis: boolean },
): Promise<T> {
  const given = [options.postgres, options.sqlite, options.redis, choices.file].filter((s) => s !== undefined);
  if (given.length !== 1) {
    const names = [choices.files ? 'a JSONL file' : null, '--postgres <url>', '--sqlite <file>'];
    if (choices.redis) names.push('--redis <url>');
    throw new UsageError(`give exactly one of: ${names.filter(Boolean).join(', ')}`);
  }
  try {
    if (options.sqlite !== undefined) {
      const { SqliteStores } = await import('../stores/sqlite.js');
      const stores = new SqliteStores({ filename: options.sqlite });
      try {
        return await use({ ledger: stores.ledger, audit: stores.audit });
      } finally {
        stores.close();
      }
    }
    if (options.redis !== undefined) {
      const { RedisStores } = await import('../stores/redis.js');
      const stores = new RedisStores({ url: options.redis, prefix: options.redisPrefix ?? 'toolgate' });
      try {
        return await use({ ledger: stores.ledger, audit: null });
      } finally {
        await stores.close();
      }
    }
    const { PostgresStores } = await import('../stores/postgres.js');
    const stores = new PostgresStores({ connectionString: options.postgres!, schema: options.schema ?? 'toolgate' });
    try {
      return await use({ ledger: stores.ledger, audit: stores.audit });
    } finally {
      await stores.close();
    }
  } catch (error) {
    // A bad option value (a prefix, a query field) is the user's: a usage error naming it.
    if (error instanceof TypeError || error instanceof UsageError) throw new UsageError(error.message);
    throw error;
  }
}

/** An ISO time, or a duration ago ("15m", "24h", "7d"); `option` names it in the usage error. */
export function timeOf(value: string, option: string): number {
  const ago = /^(\d+)(s|m|h|d)$/.exec(value);
  if (ago) return Date.now() - Number(ago[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[ago[2] as 's'];
  const at = Date.parse(value);
  if (!Number.isFinite(at))
    throw new UsageError(`${option} must be ISO 8601 or a duration like 24h, got ${JSON.stringify(value)}`);
  return at;
}

/** A whole number >= 1 from an option; `option` names it in the usage error. */
export function countOf(value: string | undefined, option: string, fallback: number): number {
  const n = Number(value ?? fallback);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${option} must be a whole number >= 1, got ${value}`);
  return n;
}
