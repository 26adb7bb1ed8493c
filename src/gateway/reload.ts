/**
 * THE policy in force: one frozen snapshot of everything a policy file decides at the gateway — the tool
 * policy (with the pin rule), the resource and prompt rules, the gateway's own context, the pins, the
 * limiter from `limits:` over its counter store, the approvers — built whole from a loaded file and
 * swapped in one synchronous step. A request reads the snapshot in force when it starts and keeps it; a
 * call that waited for a person is decided again under the snapshot in force then, whole, never under half
 * of each. A reload is prepared (everything the new file needs built and checked) and then committed; a
 * file that fails any check is refused and the snapshot in force stays.
 */
import { ConfigurationError } from '../errors.js';
import type { GateContext } from '../contracts/gate.js';
import { canonicalJson } from '../crypto.js';
import { describe } from '../names.js';
import { PermissionPolicy } from '../permissions/policy.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import { formatIssue, readPolicyFile } from '../policy-file/load.js';
import type { ToolRegistry } from '../registry.js';
import type { CounterStore } from '../stores/types.js';
import type { GatewayAuditRecord } from './audit.js';
import type { GatewayInbox } from './inbox.js';
import { reloadRequest, reloadVerdict, type GatewayReloadGuard } from './reload-guard.js';
import { checkContext } from './context.js';
import { checkUpstreamTenants } from './tenancy.js';
import type { ItemGate } from './items.js';
import { checkPromptNames, checkToolNamespaces, type PolicyInForce } from './policy.js';
import { withPinRule } from './pin-rule.js';
import { PinStore, PinTracker, readLockFile } from './pins.js';
export type { PolicyInForce } from './policy.js';
import type { Relay } from './relay.js';
import type { Router } from './router.js';
import type { GatewayUpstreamOptions, Upstream } from './upstream.js';

/** Pinning of tool definitions. */
export interface GatewayPinOptions {
  /** The lock file (created when missing). */
  readonly file: string;
  /** What a drifted tool gets: refused (hidden from tools/list), or asked for per call. @default 'refuse' */
  readonly onDrift?: 'refuse' | 'ask';
}

/** Options of {@link Gateway.reload}. */
export interface GatewayReloadOptions {
  /**
   * The gateway's context under the new policy, or a function of the new policy file that makes it (a
   * throw refuses the reload). @default the option given at start, else the new policy's default context
   */
  readonly context?: GateContext | ((policy: PolicySet) => GateContext);
  /** Pinning under the new policy (e.g. `(p) => gatewayConfigOf(p).pins`); a throw refuses the reload. @default unchanged */
  readonly pins?: GatewayPinOptions | null | ((policy: PolicySet) => GatewayPinOptions | null);
}

/**
 * What a reload did: the changes now in force, or why the policy in force was kept — `held` when it widens
 * access and waits for a person's approval in the inbox (`settled` resolves with what became of it).
 */
export type GatewayReloadResult =
  | { readonly ok: true; readonly version: string; readonly changes: readonly string[] }
  | { readonly ok: false; readonly version: string; readonly error: string; readonly held?: never }
  | {
      readonly ok: false;
      readonly held: true;
      readonly version: string;
      readonly error: string;
      /** The approval request's id in the inbox. */
      readonly approval: string;
      /** Resolves once the request is answered or expires: the reload in force, or why it is not. */
      readonly settled: Promise<GatewayReloadResult>;
    };

/** The reload guard and where a held reload is asked (the gateway's inbox and its binding key). */
export interface ReloadGuardDeps {
  readonly settings: GatewayReloadGuard;
  readonly inbox: GatewayInbox | undefined;
  readonly secret: Uint8Array;
}

/** What building a snapshot needs besides the file. */
export interface InForceInputs {
  readonly upstreams: Readonly<Record<string, GatewayUpstreamOptions>>;
  /** Where the limits of every snapshot count (kept across reloads: a reload does not reset a window). */
  readonly counters: CounterStore;
  readonly audit: (record: GatewayAuditRecord) => void;
  /** Whether an audit sink records what shadow rules would have done (a sink was given). */
  readonly recorded: boolean;
  /** Serve a policy with shadow rules although nothing records them (`--allow-unrecorded-shadow`). */
  readonly allowUnrecordedShadow: boolean;
}

/**
 * Builds the snapshot for `set`, checking all of it (a ConfigurationError or TypeError names what is
 * wrong). `previous`: the snapshot in force, whose pin tracker is kept when the lock file stays.
 */
export function buildInForce(
  set: PolicySet,
  context: GateContext,
  pins: GatewayPinOptions | null,
  inputs: InForceInputs,
  previous: PolicyInForce | null,
): PolicyInForce {
  checkToolNamespaces(set, inputs.upstreams);
  checkUpstreamTenants(set);
  checkPromptNames(set, inputs.upstreams);
  checkShadowRecorded(set, inputs);
  checkContext(context);
  let tracker: PinTracker | null = null;
  if (pins) {
    const kept = previous?.pins?.store.file === pins.file ? previous.pins : null;
    // The lock file is read again now: a broken one is refused here, not at the next call.
    if (kept) readLockFile(kept.store.file);
    tracker = kept ?? new PinTracker(new PinStore(pins.file), inputs.audit);
  }
  const onDrift = pins?.onDrift ?? 'refuse';
  const policy = tracker
    ? withPinRule(
        set.policy,
        (tool) => tracker.isDrifted(tool),
        onDrift,
        (tool) => tracker.isUnpinned(tool),
      )
    : set.policy;
  const limiter = set.limits.length > 0 ? set.limiter(inputs.counters) : null;
  return Object.freeze({
    set,
    context,
    pins: tracker,
    onDrift,
    policy,
    limiter,
  });
}

/** The gateway's hold on the policy in force, and how it is swapped. */
export class Reloader {
  #current: PolicyInForce;
  #closed = false;
  // Reloads run one after another, so a slow read cannot overwrite a newer policy.
  #reloading: Promise<unknown> = Promise.resolve();
  readonly #registry: ToolRegistry;
  readonly #items: ItemGate;
  readonly #router: Router;
  readonly #relay: Relay;
  readonly #inputs: InForceInputs;
  readonly #contextOption: GateContext | undefined;
  readonly #guard: ReloadGuardDeps | undefined;

  constructor(
    first: PolicyInForce,
    deps: {
      registry: ToolRegistry;
      items: ItemGate;
      router: Router;
      relay: Relay;
      contextOption: GateContext | undefined;
      guard?: ReloadGuardDeps;
    },
    inputs: InForceInputs,
  ) {
    this.#guard = deps.guard;
    this.#current = first;
    this.#registry = deps.registry;
    this.#items = deps.items;
    this.#router = deps.router;
    this.#relay = deps.relay;
    this.#inputs = inputs;
    this.#contextOption = deps.contextOption;
    this.#registry.setPermissionPolicy(first.policy);
    this.#registry.setLimiter(first.limiter);
    this.#items.enforce(first);
    this.#mode('start', [startText(first.set)]);
  }

  /** The snapshot in force now. */
  get current(): PolicyInForce {
    return this.#current;
  }

  /** Pins the tools an upstream offers now under the snapshot in force, and routes them. */
  noteTools(upstream: Upstream): void {
    this.#router.noteTools(upstream);
    this.#current.pins?.check(upstream, (registered) => this.#router.impostor(registered, upstream));
  }

  /** Reads and checks a new policy file, then swaps it in; serialised with every other reload. */
  reload(source: PolicySet | string, options: GatewayReloadOptions = {}): Promise<GatewayReloadResult> {
    const result = this.#reloading.then(async () => {
      const prepared = await this.prepare(source, options);
      if ('error' in prepared) return this.#refuse(prepared.error);
      return this.#guarded(prepared);
    });
    this.#reloading = result.catch(() => undefined);
    return result;
  }

  /** Builds and checks the snapshot a reload would swap in, or says why it cannot be. Swaps nothing. */
  async prepare(
    source: PolicySet | string,
    options: GatewayReloadOptions = {},
  ): Promise<PolicyInForce | { readonly error: string }> {
    if (this.#closed) return { error: 'the gateway is closed' };
    let next: PolicySet;
    if (typeof source === 'string') {
      const read = await readPolicyFile(source);
      if (!read.ok)
        return {
          error: `the policy file ${JSON.stringify(source)} was refused:\n${read.issues.map((i) => `  ${formatIssue(i)}`).join('\n')}`,
        };
      next = read.policy;
    } else if (isPolicySet(source)) next = source;
    else return { error: `a reload needs a loaded policy file (a PolicySet) or a file name, got ${describe(source)}` };
    if (this.#closed) return { error: 'the gateway is closed' };
    const current = this.#current;
    try {
      const wanted = options.context;
      const context = (typeof wanted === 'function' ? wanted(next) : wanted) ?? this.#contextOption ?? next.context();
      const pins =
        options.pins === undefined
          ? current.pins
            ? { file: current.pins.store.file, onDrift: current.onDrift }
            : null
          : typeof options.pins === 'function'
            ? options.pins(next)
            : options.pins;
      return buildInForce(next, context, pins, this.#inputs, current);
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
  }

  /** Swaps `next` in: one synchronous block, so no call is decided under half of the old and half of the new. */
  commit(next: PolicyInForce, notes: readonly string[] = [], approver?: string): GatewayReloadResult {
    if (this.#closed) return this.#refuse('the gateway is closed');
    const before = this.#current;
    const changes = [...policyChanges(before, next), ...notes];
    this.#current = next;
    if (before.pins !== next.pins) before.pins?.store.flush(); // a dropped lock file's pending drift write
    this.#registry.setPermissionPolicy(next.policy);
    this.#registry.setLimiter(next.limiter);
    this.#items.enforce(next);
    for (const upstream of this.#router.upstreams.values()) this.noteTools(upstream);
    if (changes.length > 0) this.#mode('reload', changes, approver !== undefined ? { approver } : {});
    this.#relay.listsChanged();
    return { ok: true, version: next.set.version, changes };
  }

  /**
   * The reload diffed against the policy in force: one that does not widen access is committed at once; one
   * that widens is held for a person's approval in the inbox (unless the guard allows widening, or there is
   * no inbox to ask: then it is committed and its record says what widened).
   */
  async #guarded(next: PolicyInForce): Promise<GatewayReloadResult> {
    const guard = this.#guard;
    if (!guard) return this.commit(next);
    const before = this.#current;
    const verdict = await reloadVerdict(before.set, next.set);
    if (!verdict.widens) return this.commit(next);
    if (guard.settings.widen === 'allow' || guard.inbox === undefined)
      return this.commit(next, [
        `the reload widens access and was not held (${guard.settings.widen === 'allow' ? '--reload widen=allow' : 'no inbox to ask'}): ${verdict.why.join('; ')}`,
      ]);
    const inbox = guard.inbox;
    const request = reloadRequest(guard.secret, before.set, next.set, verdict, guard.settings.ttlMs);
    const error = `the reload to ${next.set.version} widens access and waits for approval in the inbox; policy ${before.set.version} stays in force`;
    this.#mode('held', verdict.why, { error, approval: request.id });
    const settled = (async (): Promise<GatewayReloadResult> => {
      let answer;
      try {
        answer = await inbox.ask(request);
      } catch (e) {
        return this.#refuse(`the held reload could not be asked: ${e instanceof Error ? e.message : String(e)}`);
      }
      // Answered: applied in turn with the other reloads, and only over the policy it was diffed against.
      const applied = this.#reloading.then(() => {
        const who = answer.approver ?? 'an approver';
        if (answer.effect !== 'allow')
          return this.#refuse(
            `the held reload to ${next.set.version} was ${/time|expired/i.test(answer.reason ?? '') ? 'not answered in time' : `denied by ${who}`}${answer.reason ? `: ${answer.reason}` : ''}`,
            answer.approver,
          );
        if (this.#current !== before)
          return this.#refuse(
            `the held reload to ${next.set.version} was approved by ${who}, but another policy took effect meanwhile; reload it again`,
            answer.approver,
          );
        return this.commit(next, [`approved by ${who} (a reload that widens access)`], answer.approver);
      });
      this.#reloading = applied.catch(() => undefined);
      return applied;
    })();
    return { ok: false, held: true, version: before.set.version, error, approval: request.id, settled };
  }

  /** No reload is taken after this. */
  close(): void {
    this.#closed = true;
  }

  #refuse(error: string, approver?: string): GatewayReloadResult {
    const version = this.#current.set.version;
    this.#mode('refused', [`the new policy was refused; policy ${version} stays in force: ${error}`], {
      error,
      ...(approver !== undefined ? { approver } : {}),
    });
    return { ok: false, version, error };
  }

  #mode(
    event: 'start' | 'reload' | 'refused' | 'held',
    changes: readonly string[],
    extra: { readonly error?: string; readonly approval?: string; readonly approver?: string } = {},
  ): void {
    const { set, pins, onDrift } = this.#current;
    this.#inputs.audit({
      type: 'mode',
      time: new Date().toISOString(),
      event,
      policy: set.version,
      mode: set.data.mode ?? 'enforce',
      shadowRules: shadowRuleNames(set),
      pin: pins ? onDrift : 'off',
      changes,
      ...extra,
    });
  }
}

export function isPolicySet(value: unknown): value is PolicySet {
  return typeof value === 'object' && value !== null && (value as PolicySet).policy instanceof PermissionPolicy;
}

/** Every rule of a policy file (tool, `resources:`, `prompts:`) with its mode and what it states. */
function ruleModes(set: PolicySet): { name: string; mode: 'enforce' | 'shadow'; data: string }[] {
  const of = (name: string, data: { readonly mode?: 'enforce' | 'shadow' | undefined }) => {
    const { mode, ...rest } = data;
    return { name, mode: mode ?? 'enforce', data: canonicalJson(rest) };
  };
  return [
    ...set.rules.map((r) => of(r.name, r.data)),
    ...(set.data.resources ?? []).map((r) => of(`resources:${r.name}`, r)),
    ...(set.data.prompts ?? []).map((r) => of(`prompts:${r.name}`, r)),
  ];
}

/** The mode record's words at start. */
function startText(set: PolicySet): string {
  const shadow = shadowRuleNames(set);
  return set.data.mode === 'shadow'
    ? 'the whole policy is in shadow mode: rules decide and are recorded, the allowlists alone are enforced'
    : `policy enforced${shadow.length > 0 ? `; in shadow mode: ${shadow.join(', ')}` : ''}`;
}

/** The names of the rules in shadow mode (tool, resource and prompt rules). */
function shadowRuleNames(set: PolicySet): string[] {
  return ruleModes(set)
    .filter((r) => r.mode === 'shadow')
    .map((r) => r.name);
}

/**
 * The enforcement mode of a policy, in one line for the operator's log (printed on start and on every
 * reload): `enforce`, `enforce, with rules in shadow mode: …`, or `SHADOW` for the whole policy.
 */
export function enforcementText(set: PolicySet): string {
  const shadow = shadowRuleNames(set);
  if (set.data.mode === 'shadow')
    return 'enforcement mode: SHADOW (mode: shadow): the rules decide nothing, they are only recorded; the allowlists alone are enforced';
  return shadow.length > 0
    ? `enforcement mode: enforce, except rules in shadow mode (recorded, not enforced): ${shadow.join(', ')}`
    : 'enforcement mode: enforce (every rule enforced)';
}

/**
 * Shadow rules switch enforcement off for what they cover, and their whole point is the record of what they
 * would have done: with no audit sink nothing is recorded, and a shadow policy is enforcement silently off
 * (issue 22). Refused, at start and at reload, unless the operator said so (`allowUnrecordedShadow`).
 */
function checkShadowRecorded(set: PolicySet, inputs: InForceInputs): void {
  if (inputs.recorded || inputs.allowUnrecordedShadow) return;
  const shadow = shadowRuleNames(set);
  if (set.data.mode !== 'shadow' && shadow.length === 0) return;
  const what =
    set.data.mode === 'shadow'
      ? 'the whole policy is in shadow mode (mode: shadow)'
      : `rules in shadow mode: ${shadow.join(', ')}`;
  throw new ConfigurationError(
    `the policy has ${what}, and nothing records what they would have done: give an audit sink (--audit FILE), or --allow-unrecorded-shadow to serve it unrecorded`,
  );
}

/** Each change of enforcement between two snapshots, in words (empty when they enforce the same). */
export function policyChanges(was: PolicyInForce, now: PolicyInForce): string[] {
  const before = was.set;
  const after = now.set;
  const pinBefore = was.pins ? was.onDrift : 'off';
  const pinAfter = now.pins ? now.onDrift : 'off';
  const out: string[] = [];
  const same = (a: unknown, b: unknown): boolean => canonicalJson(a ?? null) === canonicalJson(b ?? null);
  if (before.version !== after.version) out.push(`policy ${before.version} → ${after.version}`);
  const modeBefore = before.data.mode ?? 'enforce';
  const modeAfter = after.data.mode ?? 'enforce';
  if (modeBefore !== modeAfter)
    out.push(
      modeAfter === 'shadow'
        ? 'the whole policy: enforce → shadow (its rules are recorded, no longer enforced; the allowlists alone are enforced)'
        : 'the whole policy: shadow → enforce (its rules are enforced)',
    );
  if ((before.data.fallback ?? 'deny') !== (after.data.fallback ?? 'deny'))
    out.push(`fallback: ${before.data.fallback ?? 'deny'} → ${after.data.fallback ?? 'deny'}`);
  if (pinBefore !== pinAfter) out.push(`pinned definitions: ${pinBefore} → ${pinAfter}`);
  const old = new Map(ruleModes(before).map((r) => [r.name, r]));
  const fresh = new Map(ruleModes(after).map((r) => [r.name, r]));
  for (const [name, rule] of fresh) {
    const prior = old.get(name);
    if (!prior) out.push(`rule ${JSON.stringify(name)} added (${rule.mode})`);
    else {
      if (prior.mode !== rule.mode) out.push(`rule ${JSON.stringify(name)}: ${prior.mode} → ${rule.mode}`);
      if (prior.data !== rule.data) out.push(`rule ${JSON.stringify(name)} changed (${rule.mode})`);
    }
  }
  for (const [name, rule] of old)
    if (!fresh.has(name)) out.push(`rule ${JSON.stringify(name)} removed (was ${rule.mode})`);
  const order = (names: Iterable<string>) => [...names].filter((n) => old.has(n) && fresh.has(n)).join('\n');
  if (order(old.keys()) !== order(fresh.keys())) out.push('rules reordered (the first rule that matches decides)');
  for (const key of ['agents', 'tenants', 'scopes', 'limits'] as const)
    if (!same(before.data[key], after.data[key])) out.push(`${key} changed`);
  if (!same(before.data.gateway?.upstreams, after.data.gateway?.upstreams))
    out.push('gateway.upstreams changed: takes effect when the gateway restarts');
  if (!same(before.data.tools, after.data.tools))
    out.push('tools (metadata, parameter schemas) changed: takes effect when the gateway restarts');
  if (was.pins && now.pins && was.pins.store.file !== now.pins.store.file)
    out.push(`lock file: ${was.pins.store.file} → ${now.pins.store.file}`);
  return out;
}
