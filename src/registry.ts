/**
 * ToolRegistry: the tools, the permission policy and handler, and the events; every call it runs goes
 * through the gate (src/gate.ts).
 */
import type { ToolAllowlist } from './allowlist.js';
import type { Decision, DenyDecision } from './decision.js';
import { ConfigurationError } from './errors.js';
import { Emitter } from './events.js';
import {
  formatResult,
  readCall,
  SCHEMA_FORMATS,
  toolSchema,
  type NormalizedCall,
  type SchemaFormat,
  type ShapedToolResult,
  type ToolCallInput,
  type ToolSchema,
  type UnreadableCall,
} from './formats/index.js';
import {
  allowlistFor,
  precheck,
  refusalContent,
  resolveAsk,
  type GateContext,
  type GateEnvironment,
  type Precheck,
} from './gate.js';
import { canonical, describe } from './names.js';
import { errorText, isPermissionHandler, type PermissionHandler } from './permissions/handler.js';
import { PermissionPolicy } from './permissions/policy.js';
import { isPermissionResult, PermissionResult } from './permissions/result.js';
import { defineTool, type Tool, type ToolDefinition, type ToolExecution } from './tool.js';
import { ConfusableIndex, confusablesMode, reportConfusables, type ConfusablesMode } from './unicode/confusables.js';

/** @internal The key of the registry's execute step; exported to toolgate's own routes, never from the public entry. */
export const RUN_ALLOWED = Symbol('toolgate.runAllowed');

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
}

/** The result of one call, in toolgate's own shape. */
export interface ToolResult {
  readonly callId: string;
  /** The tool name as it was asked for. */
  readonly tool: string;
  /** `ok`: ran and returned; `error`: ran and threw or timed out; `refused`: never ran. */
  readonly status: 'ok' | 'error' | 'refused';
  readonly isError: boolean;
  /** The text the model is given. */
  readonly content: string;
  /** What the tool returned, when it ran successfully. */
  readonly value?: unknown;
  readonly decision: Decision;
}

/** Events from {@link ToolRegistry.onChange}. */
export type RegistryEvent =
  | { readonly type: 'tool_registered'; readonly tool: string }
  | { readonly type: 'tool_unregistered'; readonly tool: string }
  | { readonly type: 'policy_changed'; readonly policy: PermissionPolicy | null }
  | { readonly type: 'handler_changed'; readonly handler: PermissionHandler | null }
  | {
      readonly type: 'permission_asked';
      readonly tool: string;
      readonly callId: string;
      readonly reason: string;
      readonly ruleName: string;
      readonly parameters: Readonly<Record<string, unknown>>;
    }
  | {
      readonly type: 'permission_denied';
      readonly tool: string;
      readonly callId: string;
      readonly reason: string;
      readonly ruleName: string | null;
      readonly parameters: Readonly<Record<string, unknown>> | null;
      readonly decision: DenyDecision;
    }
  | { readonly type: 'tool_decided'; readonly decision: Decision }
  | {
      readonly type: 'tool_executed';
      readonly callId: string;
      readonly tool: string;
      readonly status: 'ok' | 'error';
      readonly durationMs: number;
    };

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
  #names: readonly string[] = Object.freeze([]);
  #policy: PermissionPolicy | null = null;
  #handler: PermissionHandler | null = null;
  #handlerFallback: PermissionResult = PermissionResult.DENY;
  readonly #handlerTimeoutMs: number;
  readonly #toolTimeoutMs: number;
  readonly #confusables: ConfusablesMode;
  #lookalikes: ConfusableIndex | null = null;
  readonly #events = new Emitter<RegistryEvent>();

  constructor(options: ToolRegistryOptions = {}) {
    this.#handlerTimeoutMs = positive(options.handlerTimeoutMs, 'handlerTimeoutMs', 60_000);
    this.#toolTimeoutMs = positive(options.toolTimeoutMs, 'toolTimeoutMs', 60_000);
    this.#confusables = confusablesMode(options.confusables, 'confusables');
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
      this.#lookalikes ??= lookalikeIndex(this.#names);
      const pairs = this.#lookalikes.pairsWith(defined.name);
      reportConfusables(pairs, this.#confusables, `registering tool ${JSON.stringify(defined.name)}`);
      this.#lookalikes.add(defined.name);
    }
    this.#tools.set(defined.canonicalName, defined);
    this.#names = Object.freeze([...this.#names, defined.name]);
    this.#events.emit({ type: 'tool_registered', tool: defined.name });
    return defined;
  }

  /** Removes a tool; true when one was registered under that name. */
  unregister(name: string): boolean {
    const tool = this.get(name);
    if (!tool) return false;
    this.#tools.delete(tool.canonicalName);
    this.#names = Object.freeze(this.#names.filter((n) => n !== tool.name));
    this.#lookalikes = null; // rebuilt from the names left at the next register
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
    this.#events.emit({ type: 'policy_changed', policy });
  }

  getPermissionPolicy(): PermissionPolicy | null {
    return this.#policy;
  }

  /** Removes the policy: calls are then allowed (the allowlist still applies). */
  removePermissionPolicy(): void {
    this.#policy = null;
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
    this.#events.emit({ type: 'handler_changed', handler });
  }

  getPermissionHandler(): PermissionHandler | null {
    return this.#handler;
  }

  removePermissionHandler(): void {
    this.#handler = null;
    this.#events.emit({ type: 'handler_changed', handler: null });
  }

  /** Subscribes to registry events; returns the unsubscribe function. */
  onChange(listener: (event: RegistryEvent) => void): () => void {
    return this.#events.on(listener);
  }

  /** The allowlist a dispatch with this context runs under. */
  allowlist(context: GateContext = {}): ToolAllowlist {
    return allowlistFor(context, this.environment());
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
    const env = this.environment();
    return this.#resolve(await precheck(readCall(call), context, env), env).then((r) => r.decision);
  }

  /** Runs one call through the gate. */
  async invoke(name: string, args: unknown, context: GateContext = {}): Promise<ToolResult> {
    const [result] = await this.dispatch([{ name, arguments: args }], context);
    return result!;
  }

  /**
   * Runs a batch: every call is decided before any runs; one result per call, in order, each shaped like
   * its call; a refused call is an error result in its place and does not stop the others.
   */
  async executeToolCalls(calls: readonly ToolCallInput[], context: GateContext = {}): Promise<ToolCallResult[]> {
    if (!Array.isArray(calls))
      throw new TypeError(`executeToolCalls expects an array of tool calls, got ${describe(calls)}`);
    const read = calls.map(readCall);
    const results = await this.#dispatchRead(read, context);
    return results.map((result, i) => formatResult(read[i]!.format, result) ?? result);
  }

  /** Like executeToolCalls, but every result in toolgate's own shape, with its Decision. */
  async dispatch(calls: readonly ToolCallInput[], context: GateContext = {}): Promise<ToolResult[]> {
    if (!Array.isArray(calls)) throw new TypeError(`dispatch expects an array of tool calls, got ${describe(calls)}`);
    return this.#dispatchRead(calls.map(readCall), context);
  }

  /** @internal The gate's view of this registry, as it stands now. */
  environment(): GateEnvironment {
    const tools = this.#tools;
    const names = this.#names;
    return {
      lookup: (form) => tools.get(form),
      registeredNames: () => names,
      policy: this.#policy,
      handler: this.#handler,
      handlerFallback: this.#handlerFallback,
      handlerTimeoutMs: this.#handlerTimeoutMs,
    };
  }

  /** @internal Emits an event to the registry's listeners (used by routes that decide outside dispatch). */
  emit(event: RegistryEvent): void {
    this.#events.emit(event);
  }

  async #resolve(
    pre: Precheck,
    env: GateEnvironment,
  ): Promise<{ decision: Decision; tool: Tool | null; args: Record<string, unknown> | null }> {
    let outcome: { decision: Decision; tool: Tool | null; args: Record<string, unknown> | null };
    if (pre.kind === 'ask') {
      this.#events.emit({
        type: 'permission_asked',
        tool: pre.tool.name,
        callId: pre.base.callId,
        reason: pre.request.reason,
        ruleName: pre.request.ruleName,
        parameters: pre.args,
      });
      outcome = { decision: await resolveAsk(pre, env), tool: pre.tool, args: pre.args };
    } else {
      outcome = pre;
    }
    this.announce(outcome.decision);
    return outcome;
  }

  /** @internal Emits the events for a final Decision (step 8). */
  announce(decision: Decision): void {
    if (decision.effect === 'deny') {
      this.#events.emit({
        type: 'permission_denied',
        tool: decision.tool,
        callId: decision.callId,
        reason: decision.reason,
        ruleName: decision.rule,
        parameters: decision.parameters,
        decision,
      });
    }
    this.#events.emit({ type: 'tool_decided', decision });
  }

  async #dispatchRead(
    calls: readonly (NormalizedCall | UnreadableCall)[],
    context: GateContext,
  ): Promise<ToolResult[]> {
    const env = this.environment();
    // Every call is decided before any runs, so a refusal late in the batch cannot follow a side effect
    // that an earlier approval prompt was shown without.
    const decided: { decision: Decision; tool: Tool | null; args: Record<string, unknown> | null }[] = [];
    for (const call of calls) {
      let pre = precheck(call, context, env);
      if (pre instanceof Promise) pre = await pre;
      // A call decided without a handler is announced without another trip through the microtask queue.
      if (pre.kind === 'decided') {
        this.announce(pre.decision);
        decided.push(pre);
      } else {
        decided.push(await this.#resolve(pre, env));
      }
    }
    // Calls run in order; consecutive concurrency-safe calls run together, an unsafe call runs alone.
    // runAllowed never rejects (a failure is an error result), so the results can be awaited together.
    const results: (ToolResult | Promise<ToolResult>)[] = [];
    let group: Promise<ToolResult>[] = [];
    for (const { decision, tool, args } of decided) {
      if (decision.effect === 'deny' || !tool || !args) {
        results.push(refused(decision as DenyDecision));
      } else if (tool.metadata.concurrencySafe) {
        const running = this[RUN_ALLOWED](tool, args, decision, context);
        results.push(running);
        group.push(running);
      } else {
        if (group.length > 0) await Promise.all(group);
        group = [];
        results.push(await this[RUN_ALLOWED](tool, args, decision, context));
      }
    }
    return Promise.all(results);
  }

  /**
   * @internal Step 7: executes an allowed call with its timeout; a throw or a timeout is an error result.
   * Keyed by a symbol that only toolgate's own routes import, so no caller outside the package can run a
   * tool with a Decision it made up (the public routes all decide first).
   */
  async [RUN_ALLOWED](
    tool: Tool,
    args: Record<string, unknown>,
    decision: Decision,
    context: GateContext,
  ): Promise<ToolResult> {
    if (decision.effect !== 'allow') return refused(decision);
    // Only the gate's own allow Decisions execute, and only with the arguments they were decided on.
    if (args !== decision.parameters) {
      throw new TypeError('the tool can only run with the arguments its Decision was made on');
    }
    const timeoutMs = tool.metadata.timeoutMs ?? this.#toolTimeoutMs;
    const execution = new Execution(decision.callId);
    const outer = context.signal;
    const onAbort = (): void => execution.abort(outer?.reason);
    outer?.addEventListener('abort', onAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const started = performance.now();
    try {
      if (outer?.aborted) throw new Error('the dispatch was cancelled before the tool ran');
      let value: unknown = tool.execute(args, execution);
      // A tool that returned a plain value has finished: there is nothing left to time out.
      if (isThenable(value)) {
        const timedOut = new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            const error = new Error(`the tool did not finish within ${timeoutMs} ms`);
            // Reject before aborting: a tool that settles on abort must not win the race and look successful.
            reject(error);
            execution.abort(error);
          }, timeoutMs);
        });
        value = await Promise.race([value, timedOut]);
      }
      this.#events.emit({
        type: 'tool_executed',
        callId: decision.callId,
        tool: decision.tool,
        status: 'ok',
        durationMs: performance.now() - started,
      });
      return {
        callId: decision.callId,
        tool: decision.tool,
        status: 'ok',
        isError: false,
        content: contentOf(value),
        value,
        decision,
      };
    } catch (error) {
      this.#events.emit({
        type: 'tool_executed',
        callId: decision.callId,
        tool: decision.tool,
        status: 'error',
        durationMs: performance.now() - started,
      });
      return {
        callId: decision.callId,
        tool: decision.tool,
        status: 'error',
        isError: true,
        content: `Tool ${JSON.stringify(decision.tool)} failed: ${errorText(error)}`,
        decision,
      };
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    }
  }
}

/**
 * What a running tool receives beside its arguments. The AbortController is made when the tool first
 * reads `signal` (already aborted if the call was cancelled or timed out by then): making one for every
 * call cost microseconds, most tools never read it, and dispatching a no-op tool has a 3 µs budget
 * (bench/, issue 6).
 */
class Execution implements ToolExecution {
  readonly callId: string;
  #controller: AbortController | undefined;
  #aborted: { readonly reason: unknown } | undefined;

  constructor(callId: string) {
    this.callId = callId;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#aborted.reason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = { reason };
    this.#controller?.abort(reason);
  }
}

/** The error result of a refused call. */
export function refused(decision: DenyDecision): ToolResult {
  return {
    callId: decision.callId,
    tool: decision.tool,
    status: 'refused',
    isError: true,
    content: refusalContent(decision),
    decision,
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}

function isTool(value: unknown): value is Tool {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Tool).canonicalName === 'string' &&
    typeof (value as Tool).validate === 'function'
  );
}

function contentOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
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
