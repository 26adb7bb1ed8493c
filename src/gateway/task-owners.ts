/**
 * The unfinished tasks of one upstream and who owns each (the tasks extension, tasks.ts): what Relay.log
 * needs to know whose a log line may be. A task runs upstream between requests, and what the upstream
 * logs of it on its own comes with nothing that ties it to one request: while another party has an
 * unfinished task there, a line cannot be given to the client that happens to have a request in flight.
 * A task is tracked from the moment the upstream's answer creating it is read (still inside the creating
 * request) until a `tasks/get` answer says it ended (completed, failed, cancelled), a `tasks/cancel` was
 * answered, or its handle's expiry passed (ttlMs, capped as the handle is). A task the gateway cannot tie
 * to an owner is tracked under {@link NO_OWNER}, which no request has: it blocks every attribution. The
 * handle's lifetime ({@link taskTtlMs}) is defined here too, so that tasks.ts and upstream.ts share it.
 */
import { safeKey } from '../crypto.js';

/** The owner of a task created by a request that names none (nobody's: no client's request is its). */
export const NO_OWNER = '\u0000no owner';

/** The longest a task's handle is good for (and a task tracked), whatever the upstream's `ttlMs` (24 hours). */
export const TASK_HANDLE_MAX_TTL_MS = 86_400_000;

/** How long a task's handle holds: the upstream's `ttlMs` when it gave a usable one, capped by {@link TASK_HANDLE_MAX_TTL_MS}. */
export function taskTtlMs(ttlMs: unknown): number {
  return typeof ttlMs === 'number' && Number.isFinite(ttlMs) && ttlMs >= 0
    ? Math.min(ttlMs, TASK_HANDLE_MAX_TTL_MS)
    : TASK_HANDLE_MAX_TTL_MS;
}

/** The statuses after which a task does no more work upstream. */
const ENDED: ReadonlySet<unknown> = new Set(['completed', 'failed', 'cancelled']);

/** Whether a task status is one a task ends in. */
export function taskEnded(status: unknown): boolean {
  return ENDED.has(status);
}

/**
 * An upstream's unfinished tasks, by the connection they were created on and the upstream's own id (its safeKey: an
 * upstream's id past 16,383 characters by its digest, as V8 hashes a longer string by its length alone).
 */
export class UnfinishedTasks {
  readonly #tasks = new Map<string, { readonly owner: string; readonly expiresAt: number }>();

  /** A task the upstream created on connection `epoch` for `owner` (an ownerKey, or NO_OWNER). */
  started(epoch: string, taskId: string, ttlMs: unknown, owner: string, now = Date.now()): void {
    this.#tasks.set(safeKey(`${epoch} ${taskId}`), { owner, expiresAt: now + taskTtlMs(ttlMs) });
  }

  /** The task ended (or was cancelled): no longer tracked. */
  ended(epoch: string, taskId: string): void {
    this.#tasks.delete(safeKey(`${epoch} ${taskId}`));
  }

  /** The owners of the tasks still unfinished (the expired dropped). */
  owners(now = Date.now()): ReadonlySet<string> {
    const owners = new Set<string>();
    for (const [key, task] of this.#tasks)
      if (now < task.expiresAt) owners.add(task.owner);
      else this.#tasks.delete(key);
    return owners;
  }
}
