/**
 * What `toolgate gateway` watches to reload: the policy file and the lock file beside it. Each is watched by
 * its own inode (`fs.watch` of the file), not through its directory: a write to another file of that
 * directory — the audit file written beside the policy once per call — no longer wakes the gateway (issue
 * 25.2: it cost every call an inotify wake-up on the request's path). A file replaced by renaming (editors
 * that save so) or deleted is watched again under its path at its first event; a file that does not exist
 * (yet: the lock file before the first pin) is waited for by a watch of its directory, filtered by its
 * name, until it appears.
 */
import { existsSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';

/**
 * Watches the policy file and the lock file beside it; calls `changed` once a burst of events has settled
 * (100 ms). An event after which a file is as `unchanged` says this process left it (the gateway's own write of its
 * lock file) is not a change. A watch that fails is logged; SIGHUP still reloads.
 */
export function watchFiles(
  policy: string,
  lock: string | null,
  changed: () => void,
  log: (text: string) => void,
  unchanged: (file: string) => boolean = () => false,
): { close(): void } {
  const path = resolve(policy);
  const paths = [path];
  if (lock !== null && dirname(resolve(lock)) === dirname(path)) paths.push(resolve(lock));
  let timer: NodeJS.Timeout | undefined;
  const settled = (): void => {
    clearTimeout(timer);
    timer = setTimeout(changed, 100);
  };
  const failed = (error: Error): void => log(`watching ${policy} stopped (${error.message}); SIGHUP still reloads`);
  const watches = paths.map((file) => new FileWatch(file, () => unchanged(file) || settled(), failed));
  return {
    close: () => {
      clearTimeout(timer);
      for (const w of watches) w.close();
    },
  };
}

/** One file's watch: its inode while it exists, its directory (filtered by its name) while it does not. */
class FileWatch {
  readonly #path: string;
  readonly #event: () => void;
  readonly #failed: (error: Error) => void;
  #watcher: FSWatcher | undefined;
  #closed = false;

  constructor(path: string, event: () => void, failed: (error: Error) => void) {
    this.#path = path;
    this.#event = event;
    this.#failed = failed;
    this.#arm();
  }

  close(): void {
    this.#closed = true;
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  /** Any event: watched again under the path (the inode may have been replaced), and reported. */
  readonly #changed = (): void => {
    if (this.#closed) return;
    try {
      this.#arm();
    } catch (error) {
      this.#watcher = undefined;
      this.#failed(error as Error);
    }
    this.#event();
  };

  #arm(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
    if (this.#closed) return;
    try {
      this.#watcher = watch(this.#path, { persistent: false }, this.#changed);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // Not there: its directory tells when it appears (the directory is watched by its path too).
      const name = basename(this.#path);
      this.#watcher = watch(dirname(this.#path), { persistent: false }, (_event, changed) => {
        if (changed === null || changed === name) this.#changed();
      });
      // Created between the failed watch and the directory's: watched now.
      if (existsSync(this.#path)) return this.#changed();
    }
    this.#watcher.on('error', (error) => {
      if (this.#closed) return;
      // The file went away with its watch: watched again (its directory until it is back).
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return this.#changed();
      this.#failed(error);
    });
  }
}
