/**
 * What a PinStore (src/gateway/pin-store.ts) puts back over its lock file when it re-reads it: the pins it holds in
 * memory only, and the drift changes it has not written yet.
 */
import { lockRecord, type LockEntry, type LockFileData } from './lock-file.js';
import { samePin } from './pin-definitions.js';

/**
 * The lock file as read now, with the pins held in memory only (`held`: pinned while the file could not be written)
 * of every tool it does not pin. A re-read replaced the lock whole and dropped them: a tool first seen while the file
 * could not be written was unpinned again by any later change of the file (a read-only mount updated, another tool
 * pinned), and its next definition, whatever it offered, was pinned as new — a rug pull ran (atk-gwlist).
 */
export function withHeldPins(read: LockFileData, held: LockFileData): LockFileData {
  let tools: Record<string, LockEntry> | undefined;
  for (const [name, entry] of Object.entries(held.tools))
    if (read.tools[name] === undefined) (tools ??= lockRecord(read.tools))[name] = entry;
  return tools === undefined ? read : { ...read, tools };
}

/**
 * The lock file as read now, with the drift changes a store made and has not written yet (`changes`, by name; null:
 * cleared). A drift of a tool the file no longer pins, or now pins as it was offered (a `toolgate pin --accept` since),
 * is not put back: the trailing write never undoes an accept.
 */
export function withDriftChanges(read: LockFileData, changes: ReadonlyMap<string, LockEntry | null>): LockFileData {
  const drift = lockRecord(read.drift);
  for (const [name, entry] of changes) {
    if (entry === null) delete drift[name];
    else {
      const pinned = read.tools[name];
      if (pinned !== undefined && !samePin(pinned, entry.definition)) drift[name] = entry;
    }
  }
  return { ...read, drift };
}
