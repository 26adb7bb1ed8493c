/**
 * A request's context narrowed by what its token says: over HTTP the token's layers can only take tools
 * away from the gateway's own context (agent, tenant, caller), never add any.
 */
import type { AllowlistLayer } from '../allowlist.js';
import type { GateContext } from '../contracts/gate.js';
import { canonical, describe } from '../names.js';

/**
 * `base` narrowed by `over`: each layer (agent declaration, tenant, caller) stated by both is their
 * intersection by canonical form; a layer stated by one only is that one's. The result never permits
 * a tool `base` refuses. A context holding a resolved `allowlist` cannot be narrowed and is refused.
 */
export function narrowContext(base: GateContext, over: GateContext): GateContext {
  if (base.allowlist !== undefined || over.allowlist !== undefined)
    throw new TypeError(
      'a gate context with a resolved "allowlist" cannot be narrowed by a request; give agent/tenant/caller layers instead',
    );
  const baseAgent = typeof base.agent === 'object' ? base.agent : undefined;
  const overAgent = typeof over.agent === 'object' ? over.agent : undefined;
  const agentName =
    (typeof base.agent === 'string' ? base.agent : baseAgent?.name) ??
    (typeof over.agent === 'string' ? over.agent : overAgent?.name);
  const declared = intersect(baseAgent?.tools, overAgent?.tools);
  const tenantTools = intersect(base.tenant?.tools, over.tenant?.tools);
  const tenantId = base.tenant?.id ?? over.tenant?.id;
  const scopes = intersect(base.caller?.scopes, over.caller?.scopes);
  const callerId = over.caller?.id ?? base.caller?.id;
  const runId = base.runId ?? over.runId;
  return {
    ...(declared !== undefined && declared !== null
      ? { agent: { name: agentName ?? 'agent', tools: declared } }
      : agentName !== undefined
        ? { agent: agentName }
        : {}),
    ...(base.tenant || over.tenant
      ? {
          tenant: {
            ...(tenantId !== undefined ? { id: tenantId } : {}),
            ...(tenantTools !== undefined ? { tools: tenantTools } : {}),
          },
        }
      : {}),
    ...(base.caller || over.caller
      ? {
          caller: {
            ...(callerId !== undefined ? { id: callerId } : {}),
            ...(scopes !== undefined ? { scopes } : {}),
          },
        }
      : {}),
    ...(runId !== undefined ? { runId } : {}),
  };
}

// Intersections of frozen arrays are kept (weakly), so a steady caller still hits the gate's allowlist cache.
const intersections = new WeakMap<object, WeakMap<object, readonly string[]>>();

/** The names of `a` whose canonical form `b` holds; an absent layer (null/undefined) states nothing. */
function intersect(a: AllowlistLayer, b: AllowlistLayer): AllowlistLayer {
  if (a === null || a === undefined) return b;
  if (b === null || b === undefined || a === b) return a;
  for (const layer of [a, b])
    if (typeof layer === 'string' || typeof (layer as Iterable<string>)[Symbol.iterator] !== 'function')
      throw new TypeError(`an allowlist layer must be an iterable of tool names, got ${describe(layer)}`);
  const cacheable = Object.isFrozen(a) && Object.isFrozen(b) && Array.isArray(a) && Array.isArray(b);
  if (cacheable) {
    const hit = intersections.get(a)?.get(b);
    if (hit) return hit;
  }
  const forms = new Set<string>();
  for (const name of b) {
    if (typeof name !== 'string') throw new TypeError(`a tool name must be a string, got ${describe(name)}`);
    forms.add(canonical(name));
  }
  const out: string[] = [];
  for (const name of a) {
    if (typeof name !== 'string') throw new TypeError(`a tool name must be a string, got ${describe(name)}`);
    if (forms.has(canonical(name))) out.push(name);
  }
  const result = Object.freeze(out);
  if (cacheable) {
    let inner = intersections.get(a);
    if (!inner) intersections.set(a, (inner = new WeakMap()));
    inner.set(b, result);
  }
  return result;
}

/** Refuses a context option that is neither a gate context object nor a function of the request. */
export function checkContext(context: unknown): void {
  if (typeof context !== 'function' && (typeof context !== 'object' || context === null)) {
    throw new TypeError(
      `option "context" must be a gate context object or a function of the request, got ${describe(context)}`,
    );
  }
}
