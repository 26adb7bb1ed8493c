/**
 * ToolRegistry: the tools, the permission policy and handler, and the events; every call it runs goes
 * through the one path (src/gate/dispatch.ts); `invoke`, `dispatch`, `executeToolCalls` and `decide` differ
 * only in the shape of their results.
 */
import type { ToolAllowlist } from './allowlist.js';
import type { GateContext, GateEnvironment, Meter, RegistryEvent, ToolResult } from './contracts/gate.js';
import type { Route } from './contracts/route.js';
import type { Decision } from './decision.js';
import { ConfigurationError } from './errors.js';
import { Emitter } from './events.js';
import {
  formatResult,
  readCall,
  readNamedCall,
  SCHEMA_FORMATS,
  toolSchema,
  type CallFormat,
  type SchemaFormat,
  type ShapedToolResult,
  type ToolCallInput,
  type ToolSchema,
} from './formats/index.js';
import { bindEnvironment } from './gate/environment.js';
// The registry owns its environment and hands it to the path itself; every other caller goes through the façade.
import { decideCalls, dispatchCalls, dispatchOwnCall, ownResult } from './gate/dispatch.js';
import { allowlistFor, type DispatchResult } from './gate/index.js';
import { limiterMeter } from './limits/charge.js';
import type { Limiter } from './limits/limiter.js';
import { canonical, describe } from './names.js';
import { isPermissionHandler, type PermissionHandler } from './permissions/handler.js';
import { PermissionPolicy } from './permissions/policy.js';
import { isPermissionResult, PermissionResult } from './permissions/result.js';
import { defineTool, type Tool, type ToolDefinition } from './tool.js';
import { ConfusableIndex, confusablesMode, reportConfusables, type ConfusablesMode } from './unicode/confusables.js';

/** Options of {@link ToolRegistry}. */
export interface ToolRegistryOptions {
  /** How long a permission handler may take before the call is denied. @default 60_000 */
  readonly handlerTimeoutMs?: number;
  /** How long a tool may run when its metadata sets no `timeoutMs`. @default 60_000 */
  readonly toolTimeoutMs?: number;
  /**
   * A tool registered under a name that looks like a registered one (Unicode confusables, e.g. Latin
   * "a" and Cyrillic "а") but is a different permission: `'error'` refuses it with a ConfigurationError,
   * `'warn'` registers it and emits a process warning, `'off'` skips the check. Checked at `register`
   * (against the tools registered before it), never per call or per dispatch. @default 'warn'
   */
  readonly confusables?: ConfusablesMode;
  /**
   * Limits charged at step 6 of every dispatch through this registry, on every route (the registry's own,
   * the runner, the adapters, the gateway); shared across workers through the Limiter's counter store.
   * @default none
   */
  readonly limiter?: Limiter | null;
}

export type { RegistryEvent, ToolResult } from './contracts/gate.js';

/** Call shapes and the results they get back. */
export type ToolCallResult = ShapedToolResult | ToolResult;

/**
 * The registry of tools and the permission policy over them. `invoke` and `executeToolCalls` resolve
 * with refusals as results (never run a refused call) and reject only on a programming error.
 *
 * @example
 * const registry = new ToolRegistry();
 * registry.register(search);
 * registry.setPermissionPolicy(new PermissionPolicy({ rules: [ALLOW_READONLY] }));
 * const [result] = await registry.executeToolCalls(message.tool_calls, { agent: 'concierge', tenant: { id: 'acme', tools: ['search'] } });
 */
export class ToolRegistry {
  readonly #tools = new Map<string, Tool>();
  // The registered names in registration order; `#names` is its frozen copy, made when an environment
  // needs it (not per registration: copying per `register` made registering N tools quadratic).
  readonly #nameList: string[] = [];
  #names: readonly string[] | null = null;
  #policy: PermissionPolicy | null = null;
  #handler: PermissionHandler | null = null;
  #handlerFallback: PermissionResult = PermissionResult.DENY;
  readonly #handlerTimeoutMs: number;
  readonly #toolTimeoutMs: number;
  readonly #confusables: ConfusablesMode;
  #lookalikes: ConfusableIndex | null = null;
  #limiter: Limiter | null;
  #meter: Meter | null = null;
  readonly #events = new Emitter<RegistryEvent>();
  #revision = 0;
  #environment: GateEnvironment | null = null;

  constructor(options: ToolRegistryOptions = {}) {
    this.#handlerTimeoutMs = positive(options.handlerTimeoutMs, 'handlerTimeoutMs', 60_000);
    this.#toolTimeoutMs = positive(options.toolTimeoutMs, 'toolTimeoutMs', 60_000);
    this.#confusables = confusablesMode(options.confusables, 'confusables');
    this.#limiter = limiterOption(options.limiter);
    this.#meter = this.#limiter && limiterMeter(this.#limiter);
    // The gate's view of this registry is reachable only from inside the package (src/gate/environment.ts).
    bindEnvironment(this, () => this.#env());
  }

  /** Registers a tool (or a definition, which is passed to defineTool). A name taken in canonical form is a ConfigurationError. */
  register(tool: Tool | ToolDefinition): Tool {
    const defined = isTool(tool) ? tool : defineTool(tool as ToolDefinition);
    const taken = this.#tools.get(defined.canonicalName);
    if (taken) {
      throw new ConfigurationError(
        `tool ${JSON.stringify(defined.name)} collides with the registered tool ${JSON.stringify(taken.name)}: ` +
          `both have the canonical form ${JSON.stringify(defined.canonicalName)}; unregister it first or rename one`,
      );
    }
    if (this.#confusables !== 'off') {
      this.#lookalikes ??= lookalikeIndex(this.#nameList);
      const pairs = this.#lookalikes.pairsWith(defined.name);
      reportConfusables(pairs, this.#confusables, `registering tool ${JSON.stringify(defined.name)}`);
      this.#lookalikes.add(defined.name);
    }
    this.#tools.set(defined.canonicalName, defined);
    this.#nameList.push(defined.name);
    this.#names = null;
    this.#changed();
    this.#events.emit({ type: 'tool_registered', tool: defined.name });
    return defined;
  }

  /** Removes a tool; true when one was registered under that name. */
  unregister(name: string): boolean {
    const tool = this.get(name);
    if (!tool) return false;
    this.#tools.delete(tool.canonicalName);
    this.#nameList.splice(this.#nameList.indexOf(tool.name), 1);
    this.#names = null;
    this.#lookalikes = null; // rebuilt from the names left at the next register
    this.#changed();
    this.#events.emit({ type: 'tool_unregistered', tool: tool.name });
    return true;
  }

  get(name: string): Tool | undefined {
    return this.#tools.get(canonical(name));
  }

  has(name: string): boolean {
    return this.#tools.has(canonical(name));
  }

  /** The registered tools, in registration order. */
  list(): Tool[] {
    return [...this.#tools.values()];
  }

  setPermissionPolicy(policy: PermissionPolicy): void {
    if (!(policy instanceof PermissionPolicy))
      throw new TypeError(`setPermissionPolicy expects a PermissionPolicy, got ${describe(policy)}`);
    this.#policy = policy;
    this.#changed();
    this.#events.emit({ type: 'policy_changed', policy });
  }

  getPermissionPolicy(): PermissionPolicy | null {
    return this.#policy;
  }

  /** Removes the policy: calls are then allowed (the allowlist still applies). */
  removePermissionPolicy(): void {
    this.#policy = null;
    this.#changed();
    this.#events.emit({ type: 'policy_changed', policy: null });
  }

  /**
   * Sets the registry-level handler for `ask` (a policy's own handler takes precedence). `fallback`
   * is what `ask` becomes when no handler is reachable. @default fallback 'deny'
   */
  setPermissionHandler(handler: PermissionHandler, options: { readonly fallback?: PermissionResult } = {}): void {
    if (!isPermissionHandler(handler))
      throw new TypeError(
        `setPermissionHandler expects a function or an object with handle(request), got ${describe(handler)}`,
      );
    const fallback = options.fallback ?? PermissionResult.DENY;
    if (!isPermissionResult(fallback))
      throw new TypeError(`option "fallback" must be 'allow', 'deny' or 'ask', got ${describe(fallback)}`);
    this.#handler = handler;
    this.#handlerFallback = fallback;
    this.#changed();
    this.#events.emit({ type: 'handler_changed', handler });
  }

  getPermissionHandler(): PermissionHandler | null {
    return this.#handler;
  }

  /** Removes the handler and the fallback set with it: an `ask` is denied again (the default fallback). */
  removePermissionHandler(): void {
    this.#handler = null;
    // The fallback belongs to the handler it was set with: keeping an 'allow' fallback here made every
    // later ask run with no one asked (issue 22).
    this.#handlerFallback = PermissionResult.DENY;
    this.#changed();
    this.#events.emit({ type: 'handler_changed', handler: null });
  }

  /** Sets (or, with null, removes) the limits charged at step 6 of every dispatch. */
  setLimiter(limiter: Limiter | null): void {
    this.#limiter = limiterOption(limiter);
    this.#meter = this.#limiter && limiterMeter(this.#limiter);
    this.#changed();
  }

  getLimiter(): Limiter | null {
    return this.#limiter;
  }

  /** Subscribes to registry events; returns the unsubscribe function. */
  onChange(listener: (event: RegistryEvent) => void): () => void {
    return this.#events.on(listener);
  }

  /** The allowlist a dispatch with this context runs under. */
  allowlist(context: GateContext = {}): ToolAllowlist {
    return allowlistFor(context, this.#env());
  }

  /** The tool schemas a model may be shown for this context: only what its allowlist permits, in declared order. */
  schemas(format: SchemaFormat, context: GateContext = {}): ToolSchema[] {
    if (!SCHEMA_FORMATS.includes(format))
      throw new TypeError(`schemas(): format must be one of ${SCHEMA_FORMATS.join(', ')}, got ${describe(format)}`);
    const out: ToolSchema[] = [];
    for (const name of this.allowlist(context).names) {
      const tool = this.get(name);
      if (tool) out.push(toolSchema(format, tool));
    }
    return out;
  }

  /** The Decision for one call without executing it (events are emitted as for a real call). */
  async decide(call: ToolCallInput, context: GateContext = {}): Promise<Decision> {
    const [decision] = await decideCalls([readCall(call)], context, this.#env(), REGISTRY_ROUTE);
    return decision!;
  }

  /** Runs one call through the gate. */
  invoke(name: string, args: unknown, context: GateContext = {}): Promise<ToolResult> {
    // Not an async function: the result is the call's own promise, with no hop of ours after the tool's.
    try {
      // The environment read here while it stands (#env makes one only after a change): no call of its own per invoke.
      return dispatchOwnCall(readNamedCall(name, args), context, this.#environment ?? this.#env(), REGISTRY_ROUTE);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  /**
   * Runs a batch: every call is decided before any runs; one result per call, in order, each shaped like
   * its call; a refused call is an error result in its place and does not stop the others.
   */
  executeToolCalls(calls: readonly ToolCallInput[], context: GateContext = {}): Promise<ToolCallResult[]> {
    try {
      if (!Array.isArray(calls))
        throw new TypeError(`executeToolCalls expects an array of tool calls, got ${describe(calls)}`);
      if (calls.length === 1) {
        // One call (most model turns): its result alone, shaped in the hop that settles it (no await of ours).
        const call = readCall(calls[0]);
        return dispatchOwnCall(call, context, this.#env(), REGISTRY_ROUTE, ALONE_IN[call.format]);
      }
      return this.#executeBatch(calls, context);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  async #executeBatch(calls: readonly ToolCallInput[], context: GateContext): Promise<ToolCallResult[]> {
    const read = calls.map(readCall);
    const results = ownResults(await dispatchCalls(read, context, this.#env(), REGISTRY_ROUTE));
    return results.map((result, i) => formatResult(read[i]!.format, result) ?? result);
  }

  /** Like executeToolCalls, but every result in toolgate's own shape, with its Decision. */
  async dispatch(calls: readonly ToolCallInput[], context: GateContext = {}): Promise<ToolResult[]> {
    if (!Array.isArray(calls)) throw new TypeError(`dispatch expects an array of tool calls, got ${describe(calls)}`);
    return ownResults(await dispatchCalls(calls.map(readCall), context, this.#env(), REGISTRY_ROUTE));
  }

  #changed(): void {
    this.#revision++;
    // The environment before no longer answers for the registry: its look-ups are not kept any more (precheck.ts).
    if (this.#environment !== null) this.#environment.fixedLookup = false;
    this.#environment = null;
  }

  /** The gate's view of this registry as it stands now: one object per revision. */
  #env(): GateEnvironment {
    if (this.#environment) return this.#environment;
    const tools = this.#tools;
    const names = (this.#names ??= Object.freeze(this.#nameList.slice()));
    const events = this.#events;
    const env: GateEnvironment = {
      lookup: (form) => tools.get(form),
      // Every change makes a new environment and sets this false (#changed): until then, look-ups are this revision's.
      fixedLookup: true,
      registeredNames: () => names,
      policy: this.#policy,
      handler: this.#handler,
      handlerFallback: this.#handlerFallback,
      handlerTimeoutMs: this.#handlerTimeoutMs,
      meter: this.#meter,
      toolTimeoutMs: this.#toolTimeoutMs,
      revision: this.#revision,
      current: () => this.#env(),
      emit: (event) => events.emit(event),
      listening: () => events.size > 0,
    };
    return (this.#environment = env);
  }
}

/** The registry's own route: no person, no meter of its own, concurrency-safe calls run together. */
const REGISTRY_ROUTE: Route = Object.freeze({ name: 'registry', grouped: true });

/** A one-call batch's result array, shaped like its call: one function per format (no closure per call). */
const ALONE_IN: Readonly<Record<CallFormat, (result: ToolResult) => ToolCallResult[]>> = Object.freeze({
  'openai-chat': (result: ToolResult) => [formatResult('openai-chat', result) ?? result],
  'openai-responses': (result: ToolResult) => [formatResult('openai-responses', result) ?? result],
  anthropic: (result: ToolResult) => [formatResult('anthropic', result) ?? result],
  gemini: (result: ToolResult) => [formatResult('gemini', result) ?? result],
  toolgate: (result: ToolResult) => [result],
});

/** The registry's route has no person, no charge and no end of batch: every result is a ToolResult. */
function ownResults(results: DispatchResult[]): ToolResult[] {
  for (const result of results) ownResult(result);
  return results as ToolResult[];
}

function limiterOption(value: unknown): Limiter | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || typeof (value as Limiter).charge !== 'function')
    throw new TypeError(`ToolRegistry option "limiter" must be a Limiter, got ${describe(value)}`);
  return value as Limiter;
}

function isTool(value: unknown): value is Tool {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Tool).canonicalName === 'string' &&
    typeof (value as Tool).validate === 'function'
  );
}

function positive(value: unknown, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(
      `ToolRegistry option "${option}" must be a positive number of milliseconds, got ${describe(value)}`,
    );
  }
  return value;
}

function lookalikeIndex(names: readonly string[]): ConfusableIndex {
  const index = new ConfusableIndex();
  for (const name of names) index.add(name);
  return index;
}
