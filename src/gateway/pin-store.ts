/**
 * The pins of one lock file (PinStore): a tool checked against its pin, pinned when new and its drift recorded, the
 * drifted definitions accepted; the file read once a batch or a listing's questions, written once a batch, and
 * drift-only changes written at most once per DRIFT_WRITE_MS. Imported through ./pins.js.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { canonical } from '../names.js';
import { hashOf } from '../crypto.js';
import {
  lockRecord,
  PINS_PER_UPSTREAM_MAX,
  readLockFile,
  warnLegacy,
  writeLockFile,
  writtenHere,
  type LockEntry,
  type LockFileData,
  type PinnedDefinition,
} from './lock-file.js';
import { comparable, definitionDiff, listedDefinitionPin, pinnedDefinition, samePin } from './pin-definitions.js';
import { withDriftChanges, withHeldPins } from './lock-merge.js';

/** What pinning says of a tool offered now; `full`: not pinned, its upstream holds PINS_PER_UPSTREAM_MAX (`reason`). */
export type PinCheck =
  | { readonly state: 'pinned'; readonly diff?: never }
  | { readonly state: 'new'; readonly diff?: never }
  | { readonly state: 'drift'; readonly diff: string; readonly pinned: LockEntry; readonly offered: LockEntry }
  | { readonly state: 'full'; readonly diff?: never; readonly reason: string };

/**
 * What {@link PinStore.accept} did: the tools it pinned (canonical names), and each tool of its `reviewed` it did not —
 * named with a sha256 (`sha256`) that its recorded drift is not: `recorded` is that drift's, null when none is
 * recorded. A reviewed tool pinned as named already is in neither.
 */
export type PinAccept = { readonly accepted: readonly string[]; readonly refused: readonly PinRefused[] };

/** A reviewed tool {@link PinStore.accept} did not accept: the sha256 named, and the drift recorded (null: none). */
export type PinRefused = { readonly tool: string; readonly sha256: string; readonly recorded: string | null };

/**
 * The least time between two writes of a lock file by one store whose only changes are drifts recorded or cleared (no
 * new pin, no re-pin). Each write is the whole file, every pin of every upstream: an upstream at its bound of pins
 * toggling one tool between its pin and a drift at each `tools/list_changed` made each listing write it (11.7 MB and
 * ~95 ms of CPU a listing with 300-byte descriptions, atk-pins). The gateway decides from memory at once; the drift
 * record on disk is for a person (`toolgate pin --accept`, `toolgate explain`), who can wait seconds: the first drift
 * change is written at once, the later ones of the interval in one trailing write (one whole-file write in 5 s).
 */
export const DRIFT_WRITE_MS = 5_000;

/** The store of each lock file (by absolute path) with a drift write pending: another store of it flushes it first. */
const pendingDrift = new Map<string, PinStore>();

/**
 * The pins of one lock file. `check` pins a tool seen for the first time and records a drifted one;
 * `accept` makes drifted definitions the pinned ones. The file is re-read when it changes on disk, so a
 * `toolgate pin --accept` takes effect in a running gateway.
 */
export class PinStore {
  readonly file: string;
  #lock: LockFileData;
  #mtime: number;
  #merged = false; // re-read after another writer changed it: the next write carries that (writeLockFile's `own`)
  /** False since the last write failed: pins are kept in memory only until a write (each save tries) succeeds. */
  #writable = true;
  /** True while {@link batch} runs: the file is read once at its start and written once at its end. */
  #batching = false;
  /** True while {@link reading} runs: the file's state read once at its start. */
  #reading = false;
  /** A pin added or re-pinned within the batch: written at its end. */
  #pinned = false;
  /** Drift records set (or cleared: null) and not written yet, by name: put back over each re-read (DRIFT_WRITE_MS). */
  readonly #driftUnsaved = new Map<string, LockEntry | null>();
  /** Within a batch: a drift record set or cleared. */
  #driftChanged = false;
  /** When this store last wrote for drift changes only (Date.now()). */
  #driftWrittenAt = -Infinity;
  /** The trailing write of drift changes, when one is pending. */
  #driftTimer: ReturnType<typeof setTimeout> | undefined;
  /** Within a batch: the pins each upstream's listings hold (LockEntry.upstream), counted at its first new tool. */
  #pinsOf: Map<string, number> | undefined;

  constructor(file: string) {
    this.file = file;
    // This process's drift write pending for the file is on disk before it is read (the admin API's own store).
    pendingDrift.get(resolve(file))?.flush();
    this.#lock = readLockFile(file);
    this.#mtime = this.#statMtime();
  }

  #statMtime(): number {
    try {
      return statSync(this.file).mtimeMs;
    } catch {
      return 0;
    }
  }

  #fresh(): LockFileData {
    if (this.#batching || this.#reading) return this.#lock;
    const mtime = this.#statMtime();
    if (mtime !== this.#mtime) {
      if (!writtenHere(this.file)) this.#merged = true;
      const read = readLockFile(this.file);
      const held = this.#writable ? read : withHeldPins(read, this.#lock);
      this.#lock = this.#driftUnsaved.size > 0 ? withDriftChanges(held, this.#driftUnsaved) : held;
      this.#mtime = mtime;
    }
    return this.#lock;
  }

  /** Writes `lock` whole (the drift changes pending with it). */
  #save(lock: LockFileData): void {
    this.#lock = lock;
    this.#driftUnsaved.clear();
    this.#cancelDriftWrite();
    try {
      writeLockFile(this.file, lock, !this.#merged);
      this.#merged = false;
      this.#mtime = this.#statMtime();
      this.#writable = true;
    } catch (error) {
      if (!this.#writable) return; // warned when this run of failures began: the next save tries again
      this.#writable = false;
      process.emitWarning(
        `toolgate: the lock file ${JSON.stringify(this.file)} cannot be written (${(error as Error).message}); pins are kept in memory`,
        { code: 'TOOLGATE_LOCK_READONLY' },
      );
    }
  }

  #cancelDriftWrite(): void {
    if (this.#driftTimer === undefined) return;
    clearTimeout(this.#driftTimer);
    this.#driftTimer = undefined;
    const key = resolve(this.file);
    if (pendingDrift.get(key) === this) pendingDrift.delete(key);
  }

  /** After a batch that changed drift records only: written now, or by one trailing write (DRIFT_WRITE_MS). */
  #saveDrift(): void {
    if (this.#driftTimer !== undefined) return; // the pending write will take these too
    const wait = this.#driftWrittenAt + DRIFT_WRITE_MS - Date.now();
    if (wait <= 0) {
      this.#driftWrittenAt = Date.now();
      this.#save(this.#lock);
      return;
    }
    this.#driftTimer = setTimeout(() => this.flush(), wait);
    this.#driftTimer.unref();
    pendingDrift.set(resolve(this.file), this);
  }

  /**
   * Writes the drift changes still pending (DRIFT_WRITE_MS) at once, merged with the file as it is now (re-read if it
   * changed: an accept made meanwhile stands). The gateway calls it when it closes or drops this store.
   */
  flush(): void {
    this.#cancelDriftWrite();
    if (this.#driftUnsaved.size === 0) return;
    let lock: LockFileData;
    try {
      lock = this.#fresh();
    } catch {
      return; // the file cannot be read (edited by hand): not written over; the next drift change tries again
    }
    this.#driftWrittenAt = Date.now();
    this.#save(lock);
  }

  /** The current lock (re-read if the file changed). */
  get lock(): LockFileData {
    return this.#fresh();
  }

  /**
   * Runs `checks` (the {@link check}s of one listing) with the file read once before them and written once after
   * them, if they changed it. Each tool's first sight wrote the whole file (sorted, pretty-printed, renamed into
   * place) and copied the lock: an upstream of n new tools wrote n files of up to n entries (2,000 tools, ~3.4 GB).
   * Within it, the lock is this store's own copy, changed in place.
   */
  batch<T>(checks: () => T): T {
    if (this.#batching) return checks();
    let lock: LockFileData;
    try {
      lock = this.#fresh();
    } catch {
      // The file cannot be read: each check meets that itself (its caller counts the tool as drifted).
      return checks();
    }
    this.#lock = { ...lock, tools: lockRecord(lock.tools), ...(lock.drift ? { drift: lockRecord(lock.drift) } : {}) };
    this.#pinsOf = undefined;
    this.#batching = true;
    try {
      return checks();
    } finally {
      this.#batching = false;
      if (this.#pinned) this.#save(this.#lock);
      else if (this.#driftChanged) this.#saveDrift();
      this.#pinned = this.#driftChanged = false;
    }
  }

  /**
   * Runs `reads` (the questions one client listing asks of each of its tools: {@link matches}, {@link lock}) with the
   * file's state read once at its start, so an accept made before it is seen. Each question stat'ed the file: one
   * `tools/list` over 10,000 drifted tools, 10,000 stats (atk-pins).
   */
  reading<T>(reads: () => T): T {
    if (this.#batching || this.#reading) return reads();
    try {
      this.#fresh();
    } catch {
      return reads(); // the file cannot be read: each question meets that itself
    }
    this.#reading = true;
    try {
      return reads();
    } finally {
      this.#reading = false;
    }
  }

  /** Pins `name` as `entry` in the batch's own copy of the lock ({@link batch}), written when it ends. */
  #setTool(name: string, entry: LockEntry): void {
    (this.#lock.tools as Record<string, LockEntry>)[name] = entry;
    this.#pinned = true;
  }

  /** Records the drift of `name` as `entry`, or drops it (undefined), in the batch's own copy of the lock. */
  #setDrift(name: string, entry: LockEntry | undefined): void {
    const drift = (this.#lock.drift ?? lockRecord()) as Record<string, LockEntry>;
    if (entry === undefined) delete drift[name];
    else drift[name] = entry;
    this.#lock = { ...this.#lock, drift };
    this.#driftUnsaved.set(name, entry ?? null);
    this.#driftChanged = true;
  }

  /**
   * Checks a tool offered now against its pin; pins it when it has none, records it when it drifted. A lone check
   * is a batch of one (the file read, and written if it changed); a listing's are one batch ({@link PinTracker}).
   * `upstream`: the namespace whose listing offers it, which a new pin is counted against (PINS_PER_UPSTREAM_MAX:
   * past it the tool is not pinned, `full`); none: not counted (an operator's check).
   */
  check(registered: string, definition: PinnedDefinition, upstream?: string): PinCheck {
    return this.batch(() => this.#check(registered, definition, upstream));
  }

  #check(registered: string, definition: PinnedDefinition, upstream: string | undefined): PinCheck {
    const name = canonical(registered);
    const lock = this.#fresh();
    // Reached only within a batch: a lock file that cannot be read threw just above.
    if (!this.#batching) throw new Error('toolgate: a pin check outside its batch');
    const offered: LockEntry = {
      sha256: hashOf(definition),
      definition,
      at: new Date().toISOString(),
      ...(upstream !== undefined ? { upstream } : {}),
    };
    const pinned = lock.tools[name];
    if (!pinned) {
      if (upstream !== undefined) {
        const held = this.#pinsHeld(upstream);
        if (held >= PINS_PER_UPSTREAM_MAX) return { state: 'full', reason: this.#fullReason(upstream, registered) };
        this.#pinsOf!.set(upstream, held + 1);
      }
      this.#setTool(name, offered);
      return { state: 'new' };
    }
    if (samePin(pinned, definition)) {
      if (pinned.shape === 1) {
        // Matches on the four parts a version-1 file pinned: re-pinned whole, as offered now.
        warnLegacy(this.file);
        this.#setTool(name, { ...offered, at: pinned.at });
        this.#setDrift(name, undefined);
      } else if (lock.drift?.[name]) this.#setDrift(name, undefined);
      return { state: 'pinned' };
    }
    const known = lock.drift?.[name];
    const entry = known?.sha256 === offered.sha256 ? known : offered;
    if (known?.sha256 !== offered.sha256) this.#setDrift(name, entry);
    const diff = definitionDiff(registered, pinned.definition, comparable(pinned, definition));
    return { state: 'drift', diff, pinned, offered: entry };
  }

  /** The pins the listings of `upstream` hold in the batch's lock: every entry counted once a batch, at need. */
  #pinsHeld(upstream: string): number {
    let counts = this.#pinsOf;
    if (counts === undefined) {
      counts = this.#pinsOf = new Map();
      for (const entry of Object.values(this.#lock.tools))
        if (entry.upstream !== undefined) counts.set(entry.upstream, (counts.get(entry.upstream) ?? 0) + 1);
    }
    return counts.get(upstream) ?? 0;
  }

  #fullReason(upstream: string, registered: string): string {
    return (
      `toolgate: ${JSON.stringify(registered)} is not pinned, and its calls are refused: upstream ${JSON.stringify(upstream)} ` +
      `holds ${PINS_PER_UPSTREAM_MAX.toLocaleString('en-US')} pins in the lock file ${JSON.stringify(this.file)} ` +
      '(PINS_PER_UPSTREAM_MAX), and a pin is never dropped to make room (an upstream could evict a pin and rug-pull its tool). ' +
      `To make room, delete from the file's "tools" the entries of tools ${JSON.stringify(upstream)} no longer offers ` +
      '(GET /admin/pins lists the pinned names); the next reload (SIGHUP, POST /admin/reload, or the change of a watched ' +
      'lock file) or listing of the upstream pins it.'
    );
  }

  /** The drift recorded for a tool, with its diff; undefined when it matches its pin. */
  drift(name: string, current: PinnedDefinition): { readonly diff: string } | undefined {
    const lock = this.#fresh();
    const pinned = lock.tools[canonical(name)];
    if (!pinned || samePin(pinned, current)) return undefined;
    return { diff: definitionDiff(name, pinned.definition, comparable(pinned, current)) };
  }

  /** True when the lock file pins exactly this listed definition (not when unpinned); hashed once a listed object. */
  matches(name: string, listed: Parameters<typeof pinnedDefinition>[0]): boolean {
    const pinned = this.#fresh().tools[canonical(name)];
    if (pinned === undefined) return false;
    return pinned.shape === 1
      ? samePin(pinned, pinnedDefinition(listed))
      : pinned.sha256 === listedDefinitionPin(listed);
  }

  /**
   * Makes the drifted definitions of `names` (all when empty) the pinned ones. A tool of `reviewed` (name, by its
   * canonical form → sha256; one form of two hashes is a TypeError) only while its drift is the definition reviewed,
   * of that hash (atk-pinlock). What it accepts and what of `reviewed` it refuses are decided from its one read of
   * the file: `toolgate pin` re-derived the refusals from a second read, which a drift rewritten in between made
   * tell another story than the accept's.
   */
  accept(names: readonly string[] = [], reviewed: ReadonlyMap<string, string> = new Map()): PinAccept {
    const lock = this.#fresh();
    const drift = lockRecord(lock.drift);
    const tools = lockRecord(lock.tools);
    const bound = new Map<string, string>();
    for (const [spelled, sha256] of reviewed) {
      const name = canonical(spelled);
      if ((bound.get(name) ?? sha256) !== sha256)
        throw new TypeError(`toolgate: accept: ${JSON.stringify(name)} reviewed as two definitions`);
      bound.set(name, sha256);
    }
    const accepted: string[] = [];
    for (const name of names.length > 0 ? names.map(canonical) : Object.keys(drift)) {
      const entry = drift[name];
      if (!entry || (bound.has(name) && bound.get(name) !== entry.sha256)) continue;
      tools[name] = { ...entry, at: new Date().toISOString() };
      delete drift[name];
      accepted.push(name);
    }
    // One pinned as named already is not refused: nothing is left to accept (the same accept run twice).
    const refused: PinRefused[] = [];
    for (const [tool, sha256] of bound)
      if (!accepted.includes(tool) && lock.tools[tool]?.sha256 !== sha256)
        refused.push({ tool, sha256, recorded: lock.drift?.[tool]?.sha256 ?? null });
    if (accepted.length > 0) this.#save({ version: 2, tools, drift });
    return { accepted, refused };
  }

  /** Pins definitions outright (what `toolgate pin` does for tools it has not seen). */
  pin(entries: ReadonlyMap<string, PinnedDefinition>): string[] {
    const lock = this.#fresh();
    const tools = lockRecord(lock.tools);
    const added: string[] = [];
    for (const [spelled, definition] of entries) {
      const name = canonical(spelled);
      if (tools[name]) continue;
      tools[name] = { sha256: hashOf(definition), definition, at: new Date().toISOString() };
      added.push(name);
    }
    if (added.length > 0) this.#save({ ...lock, tools });
    return added;
  }
}
