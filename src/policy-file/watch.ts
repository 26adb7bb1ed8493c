/**
 * Watching a policy file: each change is loaded whole; a change that fails to load keeps the policy in
 * force and reports why. Nothing half-loaded is ever current.
 */
import { watch as watchFs, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { describe } from '../names.js';
import { readPolicyFile } from './load.js';
import type { PolicySet } from './policy-set.js';
import type { PolicyIssue } from './types.js';

/** Options of {@link watchPolicyFile}. */
export interface WatchPolicyOptions {
  /** Called with each policy that loaded, the first one included. */
  readonly onLoad?: (policy: PolicySet, previous: PolicySet | null) => void;
  /** Called when a load fails; `kept` is the policy still in force (null before the first good load). */
  readonly onError?: (issues: readonly PolicyIssue[], kept: PolicySet | null) => void;
  /** How long to wait for a burst of writes to settle, in milliseconds. @default 50 */
  readonly debounceMs?: number;
}

/** A running watch. */
export interface PolicyWatch {
  /** The policy in force: the last one that loaded, or null before any did. */
  current(): PolicySet | null;
  /** Loads the file now (also what a change does); resolves with the policy in force afterwards. */
  reload(): Promise<PolicySet | null>;
  /** Resolves once the first load has finished, with the policy in force. */
  readonly ready: Promise<PolicySet | null>;
  close(): void;
}

/**
 * Watches a policy file (its directory, so editors that save by renaming are seen too).
 *
 * @example
 * const watch = watchPolicyFile('policy.yaml', {
 *   onLoad: (set) => registry.setPermissionPolicy(set.policy),
 *   onError: (issues) => console.error(issues.map(formatIssue).join('\n')),
 * });
 */
export function watchPolicyFile(file: string, options: WatchPolicyOptions = {}): PolicyWatch {
  if (typeof file !== 'string' || file === '')
    throw new TypeError(`watchPolicyFile expects a file name, got ${describe(file)}`);
  const debounceMs = options.debounceMs ?? 50;
  if (typeof debounceMs !== 'number' || !(debounceMs >= 0))
    throw new TypeError(`watchPolicyFile option "debounceMs" must be a number >= 0, got ${describe(debounceMs)}`);
  for (const name of ['onLoad', 'onError'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function')
      throw new TypeError(`watchPolicyFile option "${name}" must be a function, got ${describe(options[name])}`);
  }
  const path = resolve(file);
  let current: PolicySet | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  // Loads run one after another, so a slow load cannot overwrite a newer one.
  let chain: Promise<PolicySet | null> = Promise.resolve(null);

  const report = (message: string): void => {
    try {
      options.onError?.([{ file, line: 1, column: 1, at: '', code: 'watch', message }], current);
    } catch {
      // A reporter that throws cannot stop the watch either.
    }
  };
  const load = (): Promise<PolicySet | null> => {
    chain = chain.then(async () => {
      if (closed) return current;
      const result = await readPolicyFile(file);
      if (closed) return current;
      if (result.ok) {
        // In force once the host took it: an onLoad that throws keeps the previous one current, is
        // reported, and does not stop later changes from loading (a rejected chain would skip them all).
        try {
          options.onLoad?.(result.policy, current);
          current = result.policy;
        } catch (error) {
          report(`the policy loaded but onLoad refused it: ${error instanceof Error ? error.message : String(error)}`);
        }
      } else {
        try {
          options.onError?.(result.issues, current);
        } catch {
          // As above.
        }
      }
      return current;
    });
    return chain;
  };

  const watcher: FSWatcher = watchFs(dirname(path), { persistent: true }, (_event, name) => {
    if (name !== null && name !== basename(path)) return;
    clearTimeout(timer);
    timer = setTimeout(() => void load(), debounceMs);
  });
  // The directory going away (or another watcher failure) is reported like a failed load: the policy
  // in force stays in force.
  watcher.on('error', (error) => report(`watching stopped: ${error.message}`));
  const ready = load();
  return {
    current: () => current,
    reload: load,
    ready,
    close: () => {
      closed = true;
      clearTimeout(timer);
      watcher.close();
    },
  };
}
