/**
 * Pinned tool definitions: the first time the gateway sees a tool (or on `toolgate pin`), a SHA-256 of its whole
 * definition as the upstream offers it — name, title, description, input and output schemas, annotations, `_meta`,
 * every field the model may read — is written to a lock file beside the policy. A tool offered later with another
 * definition has drifted (a "rug pull"): the gateway refuses or asks, and the readable diff goes to the audit and to
 * `toolgate explain`, until `toolgate pin --accept`. A renamed tool is a removed tool and a new one (canonical names).
 *
 * Lock files of version 1 pinned only the name, description, input schema and annotations: they still load; an entry
 * of that shape is compared on those parts, a tool that still matches re-pinned whole (warned); written as version 2.
 *
 * This file is the pins' façade, which the rest of src/ imports them through: the lock file's content (lock-file.ts),
 * the pinned form of a definition (pin-definitions.ts), the store of one lock file (pin-store.ts) and the tracker of
 * the drifted tools listed now (pin-tracker.ts).
 */
export {
  defaultLockFile,
  PINS_PER_UPSTREAM_MAX,
  readLockFile,
  type LockEntry,
  type LockFileData,
  type PinnedDefinition,
} from './lock-file.js';
export { definitionDiff, definitionPin, listedDefinitionPin, pinnedDefinition } from './pin-definitions.js';
export { DRIFT_WRITE_MS, PinStore, type PinAccept, type PinCheck, type PinRefused } from './pin-store.js';
export { PinTracker } from './pin-tracker.js';
