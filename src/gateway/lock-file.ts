/**
 * The lock file of pinned tool definitions (src/gateway/pins.ts): its content, read (a missing file is empty, a
 * broken one refused) and written whole (sorted, then renamed into place: a reader sees the old file or the new
 * one, never half of one).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { hashOf } from '../crypto.js';
import { ConfigurationError } from '../errors.js';
import { parseJsonText } from '../json-text.js';
import { canonical } from '../names.js';
/**
 * The most pins the listings of one upstream may hold in the lock file: 2 × MAX_LIST_ITEMS (src/mcp/listing.ts; not
 * imported, which would load the MCP SDK with the lock file), a full listing and as many names again that it no longer
 * lists. Pins of removed tools are kept (removing and re-adding a tool must not get round its pin), so an upstream that
 * lists fresh names at every `tools/list_changed` grew the file, and each listing's write, without bound (10 listings
 * of 500 names: the tenth write 2.06 MB, atk-gwlist). Past it a tool that needs a new pin is not pinned and is refused
 * (PinStore.check's `full`); no pin is dropped to make room, which would let an upstream evict a pin and rug-pull its
 * tool. Entries without an `upstream` (written by `PinStore.pin` or an older toolgate) count for none.
 */
export const PINS_PER_UPSTREAM_MAX = 20_000;

/**
 * A pinned tool definition: the whole definition as the upstream offers it (every field; the ones named
 * here are the ones toolgate reads).
 */
export interface PinnedDefinition {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly inputSchema: unknown;
  readonly outputSchema?: unknown;
  readonly annotations?: unknown;
  readonly _meta?: unknown;
  readonly [field: string]: unknown;
}

/** A pinned (or drifted) definition in the lock file. */
export interface LockEntry {
  readonly sha256: string;
  readonly definition: PinnedDefinition;
  /** When it was pinned (or, under `drift`, first seen). */
  readonly at: string;
  /**
   * 1: pinned by a lock file of version 1, over the name, description, input schema and annotations only;
   * compared on those parts until it is re-pinned whole. Absent: the whole definition.
   */
  readonly shape?: 1;
  /** The namespace of the upstream whose listing pinned it (counted against PINS_PER_UPSTREAM_MAX). */
  readonly upstream?: string;
}

/** The lock file's content. */
export interface LockFileData {
  /** 2: whole definitions; 1 (read, never written): the older shape of four parts. */
  readonly version: 1 | 2;
  /**
   * The accepted definitions, by the canonical form of the name the gateway shows (namespace:name), as
   * the registry, rules and calls name tools: `gh:Delete_Repo` offered later is `gh:delete_repo`'s drift,
   * not a new tool. The definition keeps the upstream's spelling.
   */
  readonly tools: Readonly<Record<string, LockEntry>>;
  /** Definitions offered that differ from the pinned ones, waiting for `toolgate pin --accept`. */
  readonly drift?: Readonly<Record<string, LockEntry>>;
}

/** The default lock file of a policy file: `policy.yaml` → `policy.lock.json` beside it. */
export function defaultLockFile(policyFile: string): string {
  const name = basename(policyFile, extname(policyFile));
  return join(dirname(policyFile), `${name}.lock.json`);
}

export function emptyLock(): LockFileData {
  return { version: 2, tools: lockRecord() };
}

/**
 * A record of entries by tool name without a prototype (a copy of `from`): a tool named `constructor` or `__proto__`
 * found Object.prototype's member in a plain object, never `undefined`, so it was never pinned (atk-pins).
 */
export function lockRecord(from?: Readonly<Record<string, LockEntry>>): Record<string, LockEntry> {
  return Object.assign(Object.create(null) as Record<string, LockEntry>, from);
}

const warnedLegacy = new Set<string>();

/** Once per lock file and process: its version-1 pins are being re-pinned whole. */
export function warnLegacy(file: string): void {
  if (warnedLegacy.has(file)) return;
  warnedLegacy.add(file);
  process.emitWarning(
    `toolgate: the lock file ${JSON.stringify(file)} was written by an older toolgate (version 1: it pins each tool's name, description, input schema and annotations only). ` +
      'A tool that still matches on those parts is re-pinned with its whole definition (title, output schema, _meta, …) as its upstream offers it now, and the file is rewritten as version 2; ' +
      'a tool that differs on them is drifted as before. Review what was re-pinned with `git diff` on the lock file.',
    { code: 'TOOLGATE_LOCK_V1' },
  );
}

/** Reads a lock file; a missing one is empty; a broken one is a ConfigurationError (fail closed). */
export function readLockFile(file: string): LockFileData {
  if (!existsSync(file)) return emptyLock();
  let data: unknown;
  try {
    data = parseJsonText(readFileSync(file, 'utf8')); // keys as written (Node 24: src/json-text.ts)
  } catch (error) {
    throw new ConfigurationError(`the lock file ${JSON.stringify(file)} cannot be read: ${(error as Error).message}`);
  }
  const version = (data as { version?: unknown } | null)?.version;
  const ok =
    typeof data === 'object' &&
    data !== null &&
    (version === 1 || version === 2) &&
    typeof (data as { tools?: unknown }).tools === 'object' &&
    (data as { tools?: unknown }).tools !== null;
  if (!ok)
    throw new ConfigurationError(
      `the lock file ${JSON.stringify(file)} is not a toolgate lock file (expected { "version": 2, "tools": {…} }, or version 1 of an older toolgate)`,
    );
  const lock = data as LockFileData;
  for (const [name, entry] of [...Object.entries(lock.tools), ...Object.entries(lock.drift ?? {})]) {
    if (typeof entry?.sha256 !== 'string' || hashOf(entry.definition) !== entry.sha256)
      throw new ConfigurationError(
        `the lock file ${JSON.stringify(file)}: the entry for ${JSON.stringify(name)} does not match its sha256 (edited by hand?)`,
      );
    if (entry.upstream !== undefined && typeof entry.upstream !== 'string')
      throw new ConfigurationError(
        `the lock file ${JSON.stringify(file)}: the entry for ${JSON.stringify(name)} names its upstream by ${JSON.stringify(entry.upstream)}, not a string`,
      );
  }
  // Keys by canonical form (a lock written before was keyed by spelling); two spellings of one name
  // would leave it open which definition is pinned, so they refuse the file.
  const byForm = (record: Readonly<Record<string, LockEntry>>, part: string): Record<string, LockEntry> => {
    const out = lockRecord();
    // A version-1 file's entries are of the four-part shape, whatever they say.
    const shaped = (entry: LockEntry): LockEntry =>
      version === 1 ? { ...entry, shape: 1 } : entry.shape === 1 ? { ...entry, shape: 1 } : withoutShape(entry);
    const spelled = new Map<string, string>();
    for (const [name, entry] of Object.entries(record)) {
      const form = canonical(name);
      const other = spelled.get(form);
      if (other !== undefined)
        throw new ConfigurationError(
          `the lock file ${JSON.stringify(file)}: ${part} ${JSON.stringify(other)} and ${JSON.stringify(name)} are one tool name (canonical form ${JSON.stringify(form)})`,
        );
      spelled.set(form, name);
      out[form] = shaped(entry);
    }
    return out;
  };
  return {
    version: 2,
    tools: byForm(lock.tools, 'tools'),
    ...(lock.drift ? { drift: byForm(lock.drift, 'drift') } : {}),
  };
}

function withoutShape(entry: LockEntry): LockEntry {
  const { shape: _shape, ...rest } = entry;
  return rest;
}

/**
 * `own`: false when `lock` carries a change another writer made since this process last wrote the file (PinStore re-read
 * it and merged): the write is then not this process's own for {@link writtenHere}, so the watch of `toolgate gateway`
 * still reloads — and re-checks every upstream against — that change (a trailing drift write between an operator's edit
 * and its watch event dropped the event, atk-pinlock).
 */
export function writeLockFile(file: string, lock: LockFileData, own = true): void {
  mkdirSync(dirname(file), { recursive: true });
  const sorted = (record: Readonly<Record<string, LockEntry>>): Record<string, LockEntry> =>
    Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const out: LockFileData = {
    version: 2,
    tools: sorted(lock.tools),
    ...(lock.drift && Object.keys(lock.drift).length > 0 ? { drift: sorted(lock.drift) } : {}),
  };
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(out, null, 2)}\n`);
  renameSync(tmp, file); // atomic: a reader sees the old file or the new one, never half of one
  const path = resolve(file);
  const left = own ? identityOf(path) : undefined;
  if (left === undefined) written.delete(path);
  else written.set(path, left);
}

/**
 * Each lock file this process wrote, as it left it: its inode, size and modification time. `toolgate gateway` watches
 * its lock file to reload when an operator changes it; its own writes (a listing's pins, a drift) woke that watch,
 * and each reload read the whole file again and re-checked every upstream (atk-pins: an upstream at its bound of pins
 * toggling one tool's drift, 11.7 MB written and read again per listing).
 */
const written = new Map<string, string>();

function identityOf(path: string): string | undefined {
  try {
    const stat = statSync(path, { bigint: true });
    return `${stat.ino}:${stat.size}:${stat.mtimeNs}`;
  } catch {
    return undefined;
  }
}

/**
 * Whether `file` is as this process's last {@link writeLockFile} left it (any change since, by an editor, `toolgate pin`
 * or another process, makes it not; a file this process never wrote is not).
 */
export function writtenHere(file: string): boolean {
  const path = resolve(file);
  const left = written.get(path);
  return left !== undefined && identityOf(path) === left;
}
