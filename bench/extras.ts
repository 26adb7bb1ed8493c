/**
 * The gate's other costs: `check()` on a resolved allowlist, resolving an allowlist of 100,000 names,
 * the canonical-name cache under endless unique names, and the overhead of dispatching a no-op tool
 * through `registry.executeToolCalls` against calling it directly.
 */
import { previewCall } from '../src/gate/dispatch.js';
import type { Precheck } from '../src/gate/precheck.js';
import { environmentOf } from '../src/gate/environment.js';
import { ToolAllowlist } from '../src/index.js';
import { CANONICAL_CACHE_LIMIT, canonical, canonicalCacheSize } from '../src/names.js';
import { toolgateSetup } from './engines/toolgate.js';
import { measure, measureAsync, type MeasureOptions, type Timing } from './measure.js';
import { buildScenario, type BenchCall } from './scenario.js';

export interface ExtrasOptions {
  readonly timing?: MeasureOptions;
  /** Names resolved into one allowlist. @default 100_000 */
  readonly resolveNames?: number;
  /** Unique names sent through canonical(). @default 1_000_000 */
  readonly uniqueNames?: number;
  /** Tools and rules of the registry used for the dispatch overhead. @default 1000 */
  readonly dispatchSize?: number;
  readonly log?: (line: string) => void;
}

export interface ExtrasResult {
  readonly check: Timing & { readonly names: number };
  readonly resolve: {
    readonly names: number;
    readonly runs: number;
    readonly msMedian: number;
    readonly msMin: number;
    readonly msMax: number;
    /** CPU time of the process (user + system) during a resolve, median: on a shared machine wall time also counts waiting for a core. */
    readonly cpuMsMedian: number;
    /** Heap kept by the resolved allowlist (after GC), in bytes; null without --expose-gc. */
    readonly retainedBytes: number | null;
    /**
     * The same names and plans with the layers in another order than the declaration's (reversed: a plan read from
     * its own file, not filtered from the agent's list): the median and its CPU. The declaration's order lets
     * `layerMarks` walk the names by position; another order looks each name up.
     */
    readonly otherOrder: { readonly msMedian: number; readonly cpuMsMedian: number };
  };
  readonly canonicalCache: {
    readonly names: number;
    readonly limit: number;
    readonly maxSize: number;
    readonly finalSize: number;
    readonly nsPerName: number;
    /** Heap growth across the run after GC, in bytes; null without --expose-gc. */
    readonly heapGrowthBytes: number | null;
  };
  readonly dispatch: {
    readonly size: number;
    /** `await tool.execute(args, …)`: the no-op called directly. */
    readonly direct: Timing;
    /** precheck alone on the same calls (the decision, no execution). */
    readonly precheck: Timing;
    /** `await registry.executeToolCalls([call], context)`, one call per batch. */
    readonly single: Timing;
    /** `await registry.executeToolCalls(calls, context)` with 16 calls per batch, per call. */
    readonly batched16: Timing;
    /** single − direct at p50: the gate's overhead per call (ns). */
    readonly overheadNs: number;
    readonly overheadBatchedNs: number;
    /** The same with an `async` no-op (the gate then also arms the tool's timeout). */
    readonly asyncDirect: Timing;
    readonly asyncSingle: Timing;
    readonly asyncOverheadNs: number;
  };
}

const gc: (() => void) | undefined = (globalThis as { gc?: () => void }).gc;

function heapAfterGc(): number | null {
  if (!gc) return null;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

export async function benchExtras(options: ExtrasOptions = {}): Promise<ExtrasResult> {
  const log = options.log ?? (() => {});
  const timing = options.timing;

  // check() on a resolved allowlist of 1,000 names with tenant and caller layers; the names checked are the permitted ones.
  const scenario = buildScenario(1000, { calls: 16 });
  const allowlist = ToolAllowlist.resolve(scenario.declared, {
    tenant: scenario.tenant,
    caller: scenario.caller,
    agent: scenario.agent,
  });
  const permitted = allowlist.names.slice(0, 512);
  const checkTiming = measure((from, count) => {
    for (let k = 0; k < count; k++) allowlist.check(permitted[(from + k) & 511]!);
    return count;
  }, timing);
  log(`check() on a resolved allowlist: p50 ${checkTiming.p50.toFixed(1)} ns, p99 ${checkTiming.p99.toFixed(1)} ns`);

  // ToolAllowlist.resolve of 100,000 names (tenant and caller each cut a tenth).
  const n = options.resolveNames ?? 100_000;
  const names = Array.from({ length: n }, (_, i) => `ns${i % 7}:tool_${i}`);
  const tenant = names.filter((_, i) => i % 10 !== 8);
  const callerNames = names.filter((_, i) => i % 10 !== 7);
  const timed = (tenantLayer: readonly string[], callerLayer: readonly string[]) => {
    const runs: number[] = [];
    const cpuRuns: number[] = [];
    for (let r = 0; r < 5; r++) {
      heapAfterGc();
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      const list = ToolAllowlist.resolve(names, { tenant: tenantLayer, caller: callerLayer });
      runs.push(Number(process.hrtime.bigint() - t0) / 1e6);
      const cpu = process.cpuUsage(c0);
      cpuRuns.push((cpu.user + cpu.system) / 1000);
      if (list.names.length === 0) throw new Error('resolve: nothing permitted');
    }
    return { runs, cpuRuns };
  };
  const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const { runs, cpuRuns } = timed(tenant, callerNames);
  const reversed = timed([...tenant].reverse(), [...callerNames].reverse());
  const before = heapAfterGc();
  let kept: ToolAllowlist | null = ToolAllowlist.resolve(names, { tenant, caller: callerNames });
  const after = heapAfterGc();
  const retainedBytes = before === null || after === null ? null : after - before;
  const expected = names.filter((_, i) => i % 10 !== 8 && i % 10 !== 7).length;
  if (kept.names.length !== expected)
    throw new Error(`resolve: ${kept.names.length} names permitted, expected ${expected}`);
  kept = null;
  const resolve = {
    names: n,
    runs: runs.length,
    msMedian: median(runs),
    msMin: Math.min(...runs),
    msMax: Math.max(...runs),
    cpuMsMedian: median(cpuRuns),
    retainedBytes,
    otherOrder: { msMedian: median(reversed.runs), cpuMsMedian: median(reversed.cpuRuns) },
  };
  log(
    `ToolAllowlist.resolve of ${n} names: median ${resolve.msMedian.toFixed(1)} ms (CPU ${resolve.cpuMsMedian.toFixed(1)} ms; min ${resolve.msMin.toFixed(1)}, max ${resolve.msMax.toFixed(1)}), retained ${retainedBytes === null ? 'n/a (run with --expose-gc)' : `${(retainedBytes / 1048576).toFixed(1)} MiB`}; layers in another order ${resolve.otherOrder.msMedian.toFixed(1)} ms (CPU ${resolve.otherOrder.cpuMsMedian.toFixed(1)} ms)`,
  );

  // The canonical cache under endless unique names.
  const unique = options.uniqueNames ?? 1_000_000;
  const heapBefore = heapAfterGc();
  let maxSize = 0;
  let length = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < unique; i++) {
    // Mixed spellings, so the ASCII, lower-casing and full Unicode paths all fill the cache.
    const name = i % 3 === 0 ? `probe:${i}` : i % 3 === 1 ? `Probe:${i}` : `ｐｒｏｂｅ:${i}`;
    length += canonical(name).length;
    if ((i & 1023) === 0) maxSize = Math.max(maxSize, canonicalCacheSize());
  }
  const nsPerName = Number(process.hrtime.bigint() - t0) / unique;
  maxSize = Math.max(maxSize, canonicalCacheSize());
  const heapAfter = heapAfterGc();
  if (length === 0) throw new Error('canonical: no output');
  const canonicalCache = {
    names: unique,
    limit: CANONICAL_CACHE_LIMIT,
    maxSize,
    finalSize: canonicalCacheSize(),
    nsPerName,
    heapGrowthBytes: heapBefore === null || heapAfter === null ? null : heapAfter - heapBefore,
  };
  log(
    `canonical() on ${unique} unique names: cache at most ${maxSize} entries (limit ${CANONICAL_CACHE_LIMIT}), ${nsPerName.toFixed(0)} ns a name`,
  );

  // executeToolCalls on allowed calls to no-op tools, against the no-op called directly.
  const size = options.dispatchSize ?? 1000;
  const dispatchScenario = buildScenario(size, { calls: 4096 });
  const { registry, context } = toolgateSetup(dispatchScenario);
  const env = environmentOf(registry);
  const allowed: BenchCall[] = dispatchScenario.calls.filter((call) => {
    const pre = previewCall(call, context, env) as Precheck;
    return pre.kind === 'decided' && pre.decision.effect === 'allow';
  });
  const mask = 2 ** Math.floor(Math.log2(allowed.length)) - 1;
  const calls = allowed.slice(0, mask + 1).map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }));
  const tools = calls.map((c) => registry.get(c.name)!);
  const signal = new AbortController().signal;
  const direct = await measureAsync(async (from, count) => {
    let ran = 0;
    for (let k = 0; k < count; k++) {
      const i = (from + k) & mask;
      await tools[i]!.execute(calls[i]!.arguments, { callId: calls[i]!.id, signal });
      ran++;
    }
    return ran;
  }, timing);
  const pre = measure((from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++)
      if ((previewCall(allowed[(from + k) & mask]!, context, env) as Precheck).kind === 'decided') ok++;
    return ok;
  }, timing);
  const single = await measureAsync(async (from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++) {
      const [result] = await registry.executeToolCalls([calls[(from + k) & mask]!], context);
      if (result && !(result as { isError?: boolean }).isError) ok++;
    }
    return ok;
  }, timing);
  const batches: (typeof calls)[] = [];
  for (let i = 0; i + 16 <= calls.length; i += 16) batches.push(calls.slice(i, i + 16));
  const batchMask = 2 ** Math.floor(Math.log2(batches.length)) - 1;
  const batchedRaw = await measureAsync(async (from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++)
      ok += (await registry.executeToolCalls(batches[(from + k) & batchMask]!, context)).length;
    return ok;
  }, timing);
  const asyncSetup = toolgateSetup(dispatchScenario, { asyncTools: true });
  const asyncTools = calls.map((c) => asyncSetup.registry.get(c.name)!);
  const asyncDirect = await measureAsync(async (from, count) => {
    let ran = 0;
    for (let k = 0; k < count; k++) {
      const i = (from + k) & mask;
      await asyncTools[i]!.execute(calls[i]!.arguments, { callId: calls[i]!.id, signal });
      ran++;
    }
    return ran;
  }, timing);
  const asyncSingle = await measureAsync(async (from, count) => {
    let ok = 0;
    for (let k = 0; k < count; k++) {
      const [result] = await asyncSetup.registry.executeToolCalls([calls[(from + k) & mask]!], asyncSetup.context);
      if (result && !(result as { isError?: boolean }).isError) ok++;
    }
    return ok;
  }, timing);
  const batched16 = {
    ...batchedRaw,
    p50: batchedRaw.p50 / 16,
    p99: batchedRaw.p99 / 16,
    mean: batchedRaw.mean / 16,
    min: batchedRaw.min / 16,
    max: batchedRaw.max / 16,
  };
  const dispatch = {
    size,
    direct,
    precheck: pre,
    single,
    batched16,
    overheadNs: single.p50 - direct.p50,
    overheadBatchedNs: batched16.p50 - direct.p50,
    asyncDirect,
    asyncSingle,
    asyncOverheadNs: asyncSingle.p50 - asyncDirect.p50,
  };
  log(
    `executeToolCalls on a no-op tool (${size} tools & rules): one call ${(single.p50 / 1000).toFixed(2)} µs, ` +
      `batches of 16 ${(batched16.p50 / 1000).toFixed(2)} µs a call, direct ${(direct.p50 / 1000).toFixed(2)} µs; ` +
      `overhead ${(dispatch.overheadNs / 1000).toFixed(2)} µs (batched ${(dispatch.overheadBatchedNs / 1000).toFixed(2)} µs); ` +
      `async no-op: one call ${(asyncSingle.p50 / 1000).toFixed(2)} µs, direct ${(asyncDirect.p50 / 1000).toFixed(2)} µs, overhead ${(dispatch.asyncOverheadNs / 1000).toFixed(2)} µs`,
  );
  return { check: { ...checkTiming, names: allowlist.names.length }, resolve, canonicalCache, dispatch };
}
