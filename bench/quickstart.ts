/**
 * The shapes users write (issue 12): the README quick start, timed end to end.
 *
 * A registry of N tools with a no-op `execute` and one allow rule each (first match by name, deny
 * fallback). Per request a server builds a *new* context object around a constant agent whose `tools`
 * is a plain array of all N names, the tenant's plan and the caller's scopes, plain arrays — the three
 * layers of the README's quick start:
 *
 *   await registry.invoke(name, args, {
 *     agent, tenant: { id: 'acme', tools: plan.tools }, caller: { id: user.id, scopes: user.toolScopes },
 *   })
 *
 * Measured in one process, side by side:
 * - `invoke`: the quick start as written (the plan a long-lived plain array of all N names);
 * - `plan50`: the plan read per request — a fresh array of 50 names each call (the arrays are parsed
 *   from JSON ahead of time, 1,024 of them used in turn, so each call meets an array it has not seen
 *   recently and the parse is not timed);
 * - `execute`: `executeToolCalls` of one OpenAI-shaped call (`function.arguments` a JSON string);
 * - with the async tool: `asyncExecute`, the same call with an argument text never seen before, built per call
 *   in the timed loop as a host receives it from a model (what a model's calls mostly are: the gate's JSON-text
 *   memo, src/gate/snapshot.ts, misses); `asyncExecuteRepeated`, the mix's 1,024 texts in turn (they come
 *   back, so the memo hits on nearly every call: the convenient shape, reported beside it, never the target);
 * - casbin and cedar-wasm deciding the same calls (bench/engines/, the layers as groupings / entities,
 *   the N rules as N policy lines / permits), given names in canonical form.
 *
 * Every engine must allow every call of the mix by the tool's own rule before anything is timed.
 */
import { casbinEngine } from './engines/casbin.js';
import { cedarEngine } from './engines/cedar.js';
import type { Engine } from './engines/engine.js';
import { ARGUMENTS_SCHEMA } from './engines/toolgate.js';
import { floorGate, type FloorRule } from './floor.js';
import { measure, measureAsync, type MeasureOptions, type Timing } from './measure.js';
import { buildScenario, prng, type BenchCall, type Scenario } from './scenario.js';
import { defineTool, PermissionPolicy, ToolRegistry, type GateContext } from '../src/index.js';
import { previewCall } from '../src/gate/dispatch.js';
import { environmentOf } from '../src/gate/environment.js';
import { readCall, type OpenAIChatToolCall } from '../src/formats/index.js';

/** The amount of the next argument text never seen before: counts up across every measurement of the process. */
let freshAmount = 1_000_000;

export interface QuickstartResult {
  readonly size: number;
  /** registry.invoke, README shape */
  readonly invoke: Timing;
  /** registry.invoke with a fresh 50-name plan array per request */
  readonly plan50: Timing;
  /** registry.executeToolCalls of one OpenAI chat tool call, README shape */
  readonly execute: Timing;
  readonly casbin: Timing;
  readonly cedar: Timing;
  /** The hand-written gate of bench/floor.ts with the async no-op tool (the lower of two runs, one before and one after the async figures). */
  readonly floor: Timing;
  /** registry.invoke of an `async () => 'ok'` tool, README shape. */
  readonly asyncInvoke: Timing;
  /**
   * registry.executeToolCalls of one OpenAI chat tool call to the async tool, README shape, its argument text
   * never seen before (built per call with a new amount, in the timed loop): a model's calls.
   */
  readonly asyncExecute: Timing;
  /** The same with the mix's 1,024 argument texts in turn: texts that come back (the JSON-text memo hits). */
  readonly asyncExecuteRepeated: Timing;
  /**
   * The floor handed a model's call as a host receives it: `JSON.parse` of an argument text never seen before
   * (built per call as `asyncExecute`'s), then the floor's invoke. The same work as `asyncExecute`'s before the gate
   * begins: reported beside it, never the target's floor (the is `floor`, handed a parsed object).
   */
  readonly floorParsing?: Timing;
  /**
   * Where an async invoke's time goes, each a p50 measured here (ns): `decide` steps 1–5 alone (precheck, README
   * context); `noLayers` the same with no layer given (the agent declares every registered tool); `noRules` that
   * without a policy. So allowlist ≈ decide − noLayers, rules ≈ noLayers − noRules, find + parse + snapshot +
   * validate + Decision ≈ noRules; dispatch + execute + result ≈ asyncInvoke − decide.
   */
  readonly breakdown: { readonly decide: number; readonly noLayers: number; readonly noRules: number };
  /** Registering N tools and setting the policy (ms). */
  readonly setupMs: number;
}

export interface QuickstartOptions {
  readonly timing?: MeasureOptions;
  /** Calls in the mix (a power of two). @default 1024 */
  readonly calls?: number;
  /** Skip casbin and cedar (the tests). */
  readonly toolgateOnly?: boolean;
  readonly log?: (line: string) => void;
}

/** The quick-start scenario: every tool declared, in the plan and in scope, one allow rule per tool, calls to registered tools. */
export function quickstartScenario(size: number, calls = 1024): Scenario {
  const base = buildScenario(size, { calls: 2 });
  const names = base.tools.map((t) => t.name);
  const random = prng(size * 7 + 3);
  const mix: BenchCall[] = [];
  for (let k = 0; k < calls; k++) {
    const name = names[Math.floor(random() * names.length)]!;
    mix.push({ id: `call_${k}`, name, arguments: { amount: k % 1000, mode: 'read' }, format: 'toolgate' });
  }
  return {
    ...base,
    declared: names,
    tenant: names,
    caller: names,
    rules: names.map((name, i) => ({
      id: `allow_${i}`,
      selector: { kind: 'name', name },
      condition: { kind: 'none' },
      effect: 'allow',
    })),
    calls: mix,
  };
}

export async function benchQuickstart(size: number, options: QuickstartOptions = {}): Promise<QuickstartResult> {
  const log = options.log ?? (() => {});
  const timing = options.timing;
  const scenario = quickstartScenario(size, options.calls ?? 1024);
  const names = scenario.tools.map((t) => t.name);
  const calls = scenario.calls;
  const mask = calls.length - 1;

  const t0 = performance.now();
  const registry = new ToolRegistry();
  const execute = (): string => 'ok';
  for (const name of names) registry.register(defineTool({ name, parameters: ARGUMENTS_SCHEMA, execute }));
  registry.setPermissionPolicy(
    new PermissionPolicy({
      rules: scenario.rules.map((r) => ({
        name: r.id,
        tools: [(r.selector as { name: string }).name],
        result: 'allow',
      })),
      fallback: 'deny',
    }),
  );
  const setupMs = performance.now() - t0;
  // The same registry with async tools (what real tools are: a fetch, a database).
  const asyncRegistry = new ToolRegistry();
  const executeAsync = async (): Promise<string> => 'ok';
  for (const name of names)
    asyncRegistry.register(defineTool({ name, parameters: ARGUMENTS_SCHEMA, execute: executeAsync }));
  asyncRegistry.setPermissionPolicy(registry.getPermissionPolicy()!);
  const floorRules = new Map<string, FloorRule>(
    scenario.rules.map((r) => [(r.selector as { name: string }).name, { name: r.id, effect: 'allow' }]),
  );
  const floor = floorGate(
    new Map(names.map((name) => [name, executeAsync])),
    { agent: names, tenant: names, caller: names },
    floorRules,
  );

  // What a server holds for the life of the process: the agent and the plan, plain arrays.
  const agent = { name: 'concierge', tools: [...names] };
  const plan = { id: 'acme', tools: [...names] };
  const user = { id: 'user_1', toolScopes: [...names] };
  /** The context a request builds, as the README writes it: a new object each time. */
  const contextFor = (tools: string[]): GateContext => ({
    agent,
    tenant: { id: plan.id, tools },
    caller: { id: user.id, scopes: user.toolScopes },
  });
  // Plans read per request: 50 names around the called tool, as JSON a store would return.
  const random = prng(size + 11);
  const planJson = calls.map((call) => {
    const picked = new Set([call.name]);
    while (picked.size < Math.min(50, names.length)) picked.add(names[Math.floor(random() * names.length)]!);
    return JSON.stringify([...picked].sort());
  });
  const plans: string[][] = planJson.map((json) => JSON.parse(json) as string[]);
  /** An OpenAI chat call with an argument text never seen before (a new amount each call): the agreement check's. */
  const freshCall = (call: BenchCall): OpenAIChatToolCall => ({
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: `{"amount":${freshAmount++},"mode":"read"}` },
  });
  /**
   * The calls of a timed batch with argument texts never seen before, as a host holds them when it calls: the
   * texts out of JSON.parse of a response body (flat strings, not the template's joined pieces), built before the
   * batch is timed (`prepare`), each used once.
   */
  let freshBatch: OpenAIChatToolCall[] = [];
  const freshTiming: MeasureOptions = {
    ...timing,
    prepare: (from, count) => {
      const texts = Array.from({ length: count }, () => `{"amount":${freshAmount++},"mode":"read"}`);
      freshBatch = (JSON.parse(JSON.stringify(texts)) as string[]).map((text, k) => {
        const call = calls[(from + k) & mask]!;
        return { id: call.id, type: 'function', function: { name: call.name, arguments: text } };
      });
    },
  };
  const chat = calls.map((call) => ({
    id: call.id,
    type: 'function' as const,
    function: { name: call.name, arguments: JSON.stringify(call.arguments) },
  }));

  // Agreement: every engine allows every call by that tool's rule.
  const expectRule = (call: BenchCall): string => `allow_${names.indexOf(call.name)}`;
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    const a = await registry.invoke(call.name, call.arguments, contextFor(plan.tools));
    const b = await registry.invoke(call.name, call.arguments, contextFor(plans[i]!));
    const [c] = (await registry.executeToolCalls([chat[i]!], contextFor(plan.tools))) as {
      role: string;
      content: string;
    }[];
    for (const r of [a, b])
      if (r.status !== 'ok' || r.decision.rule !== expectRule(call))
        throw new Error(`quickstart ${size}: toolgate decided ${call.name}: ${r.decision.reason}`);
    if (!c || c.content !== 'ok') throw new Error(`quickstart ${size}: executeToolCalls gave ${JSON.stringify(c)}`);
    const d = await asyncRegistry.invoke(call.name, call.arguments, contextFor(plan.tools));
    const [e] = (await asyncRegistry.executeToolCalls([chat[i]!], contextFor(plan.tools))) as { content: string }[];
    const [g] = (await asyncRegistry.executeToolCalls([freshCall(call)], contextFor(plan.tools))) as {
      content: string;
    }[];
    const f = await floor.invoke(call.id, call.name, call.arguments);
    if (d.status !== 'ok' || d.decision.rule !== expectRule(call) || d.content !== 'ok' || e?.content !== 'ok')
      throw new Error(`quickstart ${size}: the async tool gave ${d.decision.reason} / ${JSON.stringify(e)}`);
    if (g?.content !== 'ok') throw new Error(`quickstart ${size}: a fresh argument text gave ${JSON.stringify(g)}`);
    if (f.status !== 'ok' || f.rule !== expectRule(call))
      throw new Error(`quickstart ${size}: the floor decided ${f.content}`);
  }
  const engines: Engine[] = [];
  if (!options.toolgateOnly) {
    engines.push(await casbinEngine(scenario), cedarEngine(scenario));
    for (const engine of engines)
      for (const call of calls) {
        const v = engine.explain(call);
        if (v.effect !== 'allow' || !v.because.includes(`rule:${expectRule(call)}`))
          throw new Error(`quickstart ${size}: ${engine.name} decided ${call.name}: ${v.effect} ${v.because.join()}`);
      }
  }
  log(`quickstart ${size}: every engine allows all ${calls.length} calls by the tool's rule`);

  const invoke = await measureAsync(async (from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++) {
      const call = calls[(from + k) & mask]!;
      const result = await registry.invoke(call.name, call.arguments, contextFor(plan.tools));
      if (result.status === 'ok') ok++;
    }
    return ok;
  }, timing);
  const plan50 = await measureAsync(async (from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++) {
      const i = (from + k) & mask;
      const call = calls[i]!;
      const result = await registry.invoke(call.name, call.arguments, contextFor(plans[i]!));
      if (result.status === 'ok') ok++;
    }
    return ok;
  }, timing);
  const executeTiming = await measureAsync(async (from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++) {
      ok += (await registry.executeToolCalls([chat[(from + k) & mask]!], contextFor(plan.tools))).length;
    }
    return ok;
  }, timing);
  const floorRun = (): Promise<Timing> =>
    measureAsync(async (from, count) => {
      let ok = 0;
      for (let k = 0; k < count; k++) {
        const call = calls[(from + k) & mask]!;
        const result = await floor.invoke(call.id, call.name, call.arguments);
        if (result.status === 'ok') ok++;
      }
      return ok;
    }, timing);
  const floorBefore = await floorRun();
  const asyncInvoke = await measureAsync(async (from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++) {
      const call = calls[(from + k) & mask]!;
      const result = await asyncRegistry.invoke(call.name, call.arguments, contextFor(plan.tools));
      if (result.status === 'ok') ok++;
    }
    return ok;
  }, timing);
  const asyncExecute = await measureAsync(async (from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++) {
      ok += (await asyncRegistry.executeToolCalls([freshBatch[k]!], contextFor(plan.tools))).length;
    }
    return ok;
  }, freshTiming);
  const asyncExecuteRepeated = await measureAsync(async (from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++) {
      ok += (await asyncRegistry.executeToolCalls([chat[(from + k) & mask]!], contextFor(plan.tools))).length;
    }
    return ok;
  }, timing);
  const floorParsing = await measureAsync(async (from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++) {
      const call = freshBatch[k]!;
      const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
      const result = await floor.invoke(call.id, call.function.name, args);
      if (result.status === 'ok') ok++;
    }
    return ok;
  }, freshTiming);
  const floorAfter = await floorRun();
  const floorTiming = floorBefore.p50 <= floorAfter.p50 ? floorBefore : floorAfter;
  // The breakdown: steps 1–5 alone, without the layers, without the policy (a registry of the same tools, no policy).
  const env = environmentOf(asyncRegistry);
  const unruled = new ToolRegistry();
  for (const name of names) unruled.register(defineTool({ name, parameters: ARGUMENTS_SCHEMA, execute: executeAsync }));
  const bareEnv = environmentOf(unruled);
  const read = calls.map((call) => readCall({ id: call.id, name: call.name, arguments: call.arguments }));
  const short = { ...timing, budgetMs: Math.min(timing?.budgetMs ?? 1500, 700) };
  const stepTime = (context: () => GateContext, gate: typeof env): number =>
    measure((from, count) => {
      let ok = 0;
      for (let k = 0; k < count; k++) {
        const pre = previewCall(read[(from + k) & mask]!, context(), gate);
        if (!(pre instanceof Promise) && pre.kind === 'decided' && pre.decision.effect === 'allow') ok++;
      }
      return ok;
    }, short).p50;
  const none = (): GateContext => ({});
  const breakdown = {
    decide: stepTime(() => contextFor(plan.tools), env),
    noLayers: stepTime(none, env),
    noRules: stepTime(none, bareEnv),
  };
  const slow = { ...timing, minSamples: Math.min(timing?.minSamples ?? 30, 30) };
  const [casbin, cedar] = options.toolgateOnly
    ? [invoke, invoke]
    : engines.map((engine) => measure((from, count) => engine.run(calls, from, count), slow));
  const us = (t: Timing): string => `${(t.p50 / 1000).toFixed(2)} µs`;
  log(
    `quickstart ${size}: invoke ${us(invoke)}, plan of 50 per request ${us(plan50)}, executeToolCalls ${us(executeTiming)}; ` +
      `async tool: floor ${us(floorBefore)} / ${us(floorAfter)}, invoke ${us(asyncInvoke)} (${(asyncInvoke.p50 / floorTiming.p50).toFixed(2)}×), ` +
      `executeToolCalls ${us(asyncExecute)} (${(asyncExecute.p50 / floorTiming.p50).toFixed(2)}×; ` +
      `texts that come back ${us(asyncExecuteRepeated)}, ${(asyncExecuteRepeated.p50 / floorTiming.p50).toFixed(2)}×; ` +
      `the floor parsing the fresh text ${us(floorParsing)}, executeToolCalls ${(asyncExecute.p50 / floorParsing.p50).toFixed(2)}× it)` +
      (options.toolgateOnly ? '' : `; casbin ${us(casbin!)}, cedar ${us(cedar!)}`),
  );
  return {
    size,
    invoke,
    plan50,
    execute: executeTiming,
    casbin: casbin!,
    cedar: cedar!,
    floor: floorTiming,
    breakdown,
    asyncInvoke,
    asyncExecute,
    asyncExecuteRepeated,
    floorParsing,
    setupMs,
  };
}
