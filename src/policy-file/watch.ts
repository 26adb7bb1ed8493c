/**
 * Watching a policy file: each change is loaded whole; a change that fails to load keeps the policy in
 * force and reports why. Nothing half-loaded is ever current.
 */
import { watch as watchFs, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { describe } from '../names.js';
import { diffPolicies, type PolicyDiff } from './diff/index.js';
import { readPolicyFile } from './load.js';
import type { PolicySet } from './policy-set.js';
import type { PolicyIssue } from './types.js';

/** Options of {@link watchPolicyFile}. */
export interface WatchPolicyOptions {
  /**
   * Called with each policy that loaded, the first one included; `diff` is what it decides differently from
   * the policy in force (`diffPolicies`) with `diff: true` or a `guard`, else null (and null for the first).
   */
  readonly onLoad?: (policy: PolicySet, previous: PolicySet | null, diff: PolicyDiff | null) => void;
  /**
   * Whether a reload takes effect, given its diff: the policy in force stays when it answers false (or
   * throws: fail closed), and `onError` hears why (code `held`). Hold a reload that widens access until a
   * person approves it, say: `(diff) => !diff.widens`. @default every reload that loads takes effect
   */
  readonly guard?: (diff: PolicyDiff, next: PolicySet, current: PolicySet) => boolean | Promise<boolean>;
  /** Diff every reload against the policy in force and hand the diff to `onLoad`. @default true with a guard */
  readonly diff?: boolean;
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
  for (const name of ['onLoad', 'onError', 'guard'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function')
      throw new TypeError(`watchPolicyFile option "${name}" must be a function, got ${describe(options[name])}`);
  }
  const path = resolve(file);
  let current: PolicySet | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  // Loads run one after another, so a slow load cannot overwrite a newer one.
  let chain: Promise<PolicySet | null> = Promise.resolve(null);

  const report = (message: string, code = 'watch'): void => {
    try {
      options.onError?.([{ file, line: 1, column: 1, at: '', code, message }], current);
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
        // Every reload is diffed against the policy in force; a guard may keep the one in force.
        let diff: PolicyDiff | null = null;
        if (current !== null && (options.guard !== undefined || options.diff === true)) {
          const previous = current;
          try {
            diff = await diffPolicies(previous, result.policy);
            if (closed) return current;
            if (options.guard && (await options.guard(diff, result.policy, previous)) !== true) {
              report(
                `the reload to ${result.policy.version} was held by the guard; policy ${previous.version} stays in force`,
                'held',
              );
              return current;
            }
          } catch (error) {
            report(
              `the reload could not be checked (${error instanceof Error ? error.message : String(error)}); the policy in force stays`,
              'held',
            );
            return current;
          }
        }
        // In force once the host took it: an onLoad that throws keeps the previous one current, is
        // reported, and does not stop later changes from loading (a rejected chain would skip them all).
        try {
          options.onLoad?.(result.policy, current, diff);
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
