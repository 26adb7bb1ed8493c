/**
 * The drifted and unpinned tools an upstream lists now (PinTracker), over the PinStore of its lock file. Imported
 * through ./pins.js.
 */
import { canonical } from '../names.js';
import type { Tool } from '../tool.js';
import type { GatewayAuditRecord, PinAuditRecord } from './audit.js';
import type { Upstream } from './upstream.js';
import { pinnedDefinition } from './pin-definitions.js';
import type { PinCheck, PinStore } from './pin-store.js';

/**
 * The drifted tools of one lock file as the gateway sees them now: checked when an upstream connects and at every
 * `tools/list_changed`, recorded in the audit (a `pin` record per new pin, new drift or tool left unpinned), and read
 * by the pin rule of the policy in force. A reload that keeps the lock file keeps its tracker.
 */
export class PinTracker {
  readonly store: PinStore;
  /**
   * Tool canonical name → the drift diff of a drifted tool, and its upstream; `unpinned`: not pinned, its upstream
   * holding PINS_PER_UPSTREAM_MAX pins (`diff` says so). Only tools their upstream lists now: a listing drops the rest.
   */
  readonly #drifted = new Map<
    string,
    { readonly diff: string; readonly upstream: Upstream; readonly unpinned?: true }
  >();
  readonly #audit: (record: GatewayAuditRecord) => void;

  constructor(store: PinStore, audit: (record: GatewayAuditRecord) => void) {
    this.store = store;
    this.#audit = audit;
  }

  /**
   * Checks every tool an upstream offers now against its pin (pinning the new ones). `impostor`: true for a name it
   * offers under another upstream's namespace (Router.impostor): never callable, so never pinned — its pin would make
   * the rightful upstream's tool of that name a drift, for ever (atk-pins).
   */
  check(upstream: Upstream, impostor?: (registered: string) => boolean): void {
    const connection = upstream.connection;
    if (!connection) return;
    // One read and at most one write of the lock file for the whole listing.
    this.store.batch(() => this.#checkAll(upstream, connection, impostor));
  }

  #checkAll(
    upstream: Upstream,
    connection: NonNullable<Upstream['connection']>,
    impostor: ((registered: string) => boolean) | undefined,
  ): void {
    type More = { diff: string; sha256?: string } | { reason: string };
    const audit = (event: PinAuditRecord['event'], tool: string, more?: More): void =>
      this.#audit({ type: 'pin', time: new Date().toISOString(), event, upstream: upstream.namespace, tool, ...more });
    const listed = new Set<string>();
    let refused: { count: number; reason: string } | undefined;
    for (const registered of connection.tools) {
      const definition = connection.definition(registered);
      if (!definition || impostor?.(registered) === true) continue;
      const form = canonical(registered);
      listed.add(form);
      let check: PinCheck | { readonly state: 'drift'; readonly diff: string; readonly reason?: never };
      try {
        check = this.store.check(registered, pinnedDefinition(definition), upstream.namespace);
      } catch (error) {
        // The lock file cannot be read (edited by hand, removed permissions): whether this definition is
        // the pinned one is unknown, so it counts as drifted until the lock file reads again and pins it.
        check = {
          state: 'drift',
          diff: `the lock file cannot be read, so this definition cannot be checked against its pin: ${error instanceof Error ? error.message : String(error)}`,
        };
      }
      if (check.state === 'full') {
        if (this.#drifted.get(form)?.unpinned !== true) {
          refused ??= { count: 0, reason: check.reason };
          refused.count++;
          audit('unpinned', registered, { reason: check.reason }); // once while it stays listed unpinned
        }
        this.#drifted.set(form, { diff: check.reason, upstream, unpinned: true });
        continue;
      }
      const diff = check.diff;
      if (check.state !== 'drift' || diff === undefined) {
        this.#drifted.delete(form);
        if (check.state === 'new') audit('pinned', registered);
        continue;
      }
      const known = this.#drifted.get(form);
      this.#drifted.set(form, { diff, upstream });
      if (known?.diff !== diff)
        audit('drift', registered, { diff, ...('offered' in check && { sha256: check.offered.sha256 }) });
    }
    // What this upstream no longer lists cannot be called: its entries go (a listing of fresh names each time,
    // refused past the bound, would otherwise keep one for every name ever listed).
    for (const [form, entry] of this.#drifted)
      if (entry.upstream === upstream && !listed.has(form)) this.#drifted.delete(form);
    if (refused)
      process.emitWarning(
        `toolgate: ${refused.count} tools of upstream ${JSON.stringify(upstream.namespace)} newly listed are not pinned; the first: ${refused.reason}`,
        { code: 'TOOLGATE_PINS_FULL' },
      );
  }

  /** The recorded drift of a tool (by canonical name), with its diff, if any. */
  drift(form: string): { readonly diff: string } | undefined {
    return this.#drifted.get(form);
  }

  /**
   * True when `tool` is listed unpinned because its upstream holds PINS_PER_UPSTREAM_MAX pins, and the lock file
   * still pins nothing of that name (one the operator pinned since is decided as any pinned tool).
   */
  isUnpinned(tool: Tool): boolean {
    if (this.#drifted.get(tool.canonicalName)?.unpinned !== true) return false;
    try {
      return this.store.lock.tools[tool.canonicalName] === undefined;
    } catch {
      return true; // the lock file cannot be read now: still unpinned as far as is known
    }
  }

  /**
   * True when `tool`'s definition drifted from its pin. A `toolgate pin --accept` since (the lock file now
   * pins exactly what is offered) clears it; a lock file that lost the entry does not.
   */
  isDrifted(tool: Tool): boolean {
    const entry = this.#drifted.get(tool.canonicalName);
    if (!entry) return false;
    const definition = entry.upstream.connection?.definition(tool.name);
    let matches: boolean;
    try {
      matches = definition !== undefined && this.store.matches(tool.name, definition);
    } catch {
      return true; // the lock file cannot be read now: what is pinned is unknown, the drift stands
    }
    if (matches) {
      this.#drifted.delete(tool.canonicalName);
      return false;
    }
    return true;
  }
}
