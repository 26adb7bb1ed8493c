/**
 * From what a wing has to what the gate reads: a registry's gate environment is bound to the registry by its
 * constructor (a WeakMap, not part of ToolRegistry's published type) and read only inside src/gate/
 * (`npm run check:imports`: no other file imports this one but registry.ts, which binds it). The façade's
 * dispatchCalls / decideCalls / previewCall take a {@link ToolSource} — a registry, or one made by
 * {@link withTools} — and resolve its environment here, so no caller can get the emitter or forge a
 * Decision event.
 */
import type { DispatchResult, GateContext, GateEnvironment, ToolSource } from '../contracts/gate.js';
import type { Route } from '../contracts/route.js';
import type { NormalizedCall, UnreadableCall } from '../formats/index.js';
import { canonical } from '../names.js';
import type { Tool } from '../tool.js';
import * as path from './dispatch.js';
import type { Precheck } from './precheck.js';

type Call = NormalizedCall | UnreadableCall;

const environments = new WeakMap<object, () => GateEnvironment>();
/** The sources made by {@link withTools}: read like a registry, but not one. */
const overlays = new WeakSet<object>();

/** Called once by ToolRegistry's constructor. */
export function bindEnvironment(registry: object, read: () => GateEnvironment): void {
  if (environments.has(registry)) throw new TypeError('toolgate internal error: a registry is bound once');
  environments.set(registry, read);
}

/** The gate's view of `source` as it stands now; throws a TypeError for anything that is not a ToolRegistry. */
export function environmentOf(source: ToolSource): GateEnvironment {
  const read = environments.get(source);
  if (!read) throw new TypeError('expected a ToolRegistry');
  return read();
}

/** True for a ToolRegistry of this copy of toolgate. */
export function isRegistry(value: unknown): boolean {
  return typeof value === 'object' && value !== null && environments.has(value) && !overlays.has(value);
}

/**
 * `registry` with `tools` (by canonical name) found before its own: the runner's `agent:<peer>` tools, which
 * pass the gate like any tool. Decided through, it is the registry as it stands at each call (a call decided
 * again after a wait sees the registry then, with the same tools); one environment per registry revision.
 */
export function withTools(registry: ToolSource, tools: ReadonlyMap<string, Tool>): ToolSource {
  if (!isRegistry(registry)) throw new TypeError('expected a ToolRegistry');
  const read = environments.get(registry)!;
  let last: { readonly base: GateEnvironment; readonly wrapped: GateEnvironment } | null = null;
  const wrap = (env: GateEnvironment): GateEnvironment => {
    if (tools.size === 0) return env;
    if (last?.base === env) return last.wrapped;
    const wrapped: GateEnvironment = {
      ...env,
      lookup: (form) => tools.get(form) ?? env.lookup(form),
      // `tools` is the route's, changed without a new environment: its look-ups are never kept (precheck.ts).
      fixedLookup: false,
      current: () => wrap(env.current()),
    };
    last = { base: env, wrapped };
    return wrapped;
  };
  const source: ToolSource = Object.freeze({
    get: (name: string) => tools.get(canonical(name)) ?? registry.get(name),
    getPermissionPolicy: () => registry.getPermissionPolicy(),
    getPermissionHandler: () => registry.getPermissionHandler(),
  });
  environments.set(source, () => wrap(read()));
  overlays.add(source);
  return source;
}

/** A batch entry of the path, taking a registry (or a {@link withTools} source) as it stands now for its environment. */
function underSource<R>(
  run: (calls: readonly Call[], context: GateContext, env: GateEnvironment, route: Route) => R,
): (calls: readonly Call[], context: GateContext, source: ToolSource, route: Route) => R {
  return (calls, context, source, route) => run(calls, context, environmentOf(source), route);
}

/** Runs a batch through the path on `route`, under `source` as it stands now; one result per call, in order. */
export const dispatchCalls = underSource(path.dispatchCalls);

/** {@link dispatchCalls} of one call under `source`: its one result, no array made around it. */
export function dispatchCall(
  call: Call,
  context: GateContext,
  source: ToolSource,
  route: Route,
): Promise<DispatchResult> {
  return path.dispatchCall(call, context, environmentOf(source), route);
}

/** Steps 1–5 and the ask for each call under `source`, announced as if it ran, executing nothing. */
export const decideCalls = underSource(path.decideCalls);

/** Steps 1–5 under `source`, without resolving an ask and without any event: what the gate would decide now. */
export function previewCall(call: Call, context: GateContext, source: ToolSource): Precheck | Promise<Precheck> {
  return path.previewCall(call, context, environmentOf(source));
}
