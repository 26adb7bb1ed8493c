/**
 * The figures of a bench/results.json as Markdown tables, for docs/benchmarks.md:
 *
 *   npx tsx bench/report.ts [bench/results.json]
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ExtrasResult } from './extras.js';
import type { QuickstartResult } from './quickstart.js';
import type { EngineTiming } from './suite.js';

interface Results {
  readonly generated: string;
  readonly node: string;
  readonly cpu: string;
  readonly loadAverage: { readonly start: readonly number[]; readonly end: readonly number[] };
  /** How the machine's cores idle (absent in results written before 2026-12-06 22:30). */
  readonly idle?: string;
  readonly repeat: number;
  /** The README quick-start shape, end to end (absent in results written before issue 12). */
  readonly quickstart?: readonly QuickstartResult[];
  readonly timings: readonly (EngineTiming & { readonly spread: { readonly p50: readonly number[] } })[];
  readonly extras: ExtrasResult;
  readonly extrasSpread?: {
    readonly dispatchOverheadNs: readonly number[];
    readonly precheckP50: readonly number[];
    readonly checkP50: readonly number[];
  };
  readonly targets: readonly {
    readonly description: string;
    readonly target: string;
    readonly measured: string;
    readonly met: boolean;
  }[];
}

function us(ns: number): string {
  const v = ns / 1000;
  if (v < 10) return v.toFixed(2);
  if (v < 1000) return v.toFixed(1);
  return Math.round(v).toLocaleString('en');
}

export function markdown(results: Results): string {
  const sizes = [...new Set(results.timings.map((t) => t.size))].sort((a, b) => a - b);
  const engines = ['toolgate', 'naive', 'casbin', 'cedar'] as const;
  const at = (engine: string, size: number): (typeof results.timings)[number] | undefined =>
    results.timings.find((t) => t.engine === engine && t.size === size);
  const out: string[] = [];
  if (results.quickstart?.length) {
    const times = (x: number, base: number): string => `${Math.round(x / base).toLocaleString('en')}×`;
    out.push(
      '| tools & rules | `invoke` p50 / p99 (µs) | plan of 50 per request p50 (µs) | `executeToolCalls` p50 (µs) | casbin p50 (µs) | cedar-wasm p50 (µs) |',
      '| ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const q of results.quickstart)
      out.push(
        `| ${q.size.toLocaleString('en')} | ${us(q.invoke.p50)} / ${us(q.invoke.p99)} | ${us(q.plan50.p50)} | ${us(q.execute.p50)} | ` +
          `${us(q.casbin.p50)} (${times(q.casbin.p50, q.invoke.p50)}) | ${us(q.cedar.p50)} (${times(q.cedar.p50, q.invoke.p50)}) |`,
      );
    out.push('', 'The full decision alone (the sync path, frozen layers), side by side:', '');
  }
  out.push(`| tools & rules | ${engines.map((e) => `${e} p50 / p99 (µs)`).join(' | ')} |`);
  out.push(`| ---: | ${engines.map(() => '---:').join(' | ')} |`);
  for (const size of sizes) {
    const base = at('toolgate', size)!;
    const cells = engines.map((e) => {
      const t = at(e, size);
      if (!t) return '–';
      const r = t.p50 / base.p50;
      const ratio = e === 'toolgate' ? '' : ` (${r < 10 ? r.toFixed(1) : Math.round(r).toLocaleString('en')}×)`;
      return `${us(t.p50)} / ${us(t.p99)}${ratio}`;
    });
    out.push(`| ${size.toLocaleString('en')} | ${cells.join(' | ')} |`);
  }
  if (results.repeat > 1) {
    out.push(
      '',
      `toolgate p50 in each of the ${results.repeat} runs (µs): ${sizes.map((s) => `${s.toLocaleString('en')}: ${at('toolgate', s)!.spread.p50.map(us).join(', ')}`).join('; ')}.`,
    );
    const x = results.extrasSpread;
    if (x) {
      out.push(
        `executeToolCalls overhead on one no-op call in each run (µs): ${x.dispatchOverheadNs.map(us).join(', ')}; ` +
          `check() p50 (ns): ${x.checkP50.map((v) => v.toFixed(0)).join(', ')}.`,
      );
    }
  }
  const x = results.extras;
  out.push(
    '',
    '| measure | result |',
    '| --- | ---: |',
    `| \`check()\` on a resolved allowlist (${x.check.names} permitted names), p50 / p99 | ${x.check.p50.toFixed(0)} ns / ${x.check.p99.toFixed(0)} ns |`,
    `| \`ToolAllowlist.resolve\` of ${x.resolve.names.toLocaleString('en')} names, median of ${x.resolve.runs} (min–max) | ${x.resolve.msMedian.toFixed(0)} ms (${x.resolve.msMin.toFixed(0)}–${x.resolve.msMax.toFixed(0)}) |`,
    `| heap kept by that allowlist | ${x.resolve.retainedBytes === null ? 'n/a' : `${(x.resolve.retainedBytes / 1048576).toFixed(1)} MiB`} |`,
    `| canonical cache after ${x.canonicalCache.names.toLocaleString('en')} unique names (limit ${x.canonicalCache.limit}) | at most ${x.canonicalCache.maxSize} entries; ${x.canonicalCache.nsPerName.toFixed(0)} ns a name |`,
    `| \`executeToolCalls\`, one call to a no-op tool, p50 (direct call ${x.dispatch.direct.p50.toFixed(0)} ns) | ${us(x.dispatch.single.p50)} µs: overhead ${us(x.dispatch.overheadNs)} µs |`,
    `| the same in batches of 16 calls, per call | ${us(x.dispatch.batched16.p50)} µs: overhead ${us(x.dispatch.overheadBatchedNs)} µs |`,
    `| one call to an \`async\` no-op (the timeout is armed), p50 | ${us(x.dispatch.asyncSingle.p50)} µs: overhead ${us(x.dispatch.asyncOverheadNs)} µs |`,
    `| the decision alone (\`precheck\`) on those calls, p50 | ${us(x.dispatch.precheck.p50)} µs |`,
    '',
    '| target | measured | met |',
    '| --- | ---: | :---: |',
    ...results.targets.map((t) => `| ${t.description}: ${t.target} | ${t.measured} | ${t.met ? 'yes' : '**no**'} |`),
    '',
    `Measured ${results.generated.slice(0, 16).replace('T', ' ')} UTC, Node ${results.node}, ${results.cpu}, load average ${results.loadAverage.start.map((l) => l.toFixed(1)).join(' / ')} at the start and ` +
      `${results.loadAverage.end.map((l) => l.toFixed(1)).join(' / ')} at the end${results.idle === undefined ? '' : `; ${results.idle}`}${results.repeat > 1 ? `; each figure is the median of ${results.repeat} runs` : ''}.`,
  );
  return out.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(
    `${markdown(JSON.parse(readFileSync(process.argv[2] ?? 'bench/results.json', 'utf8')) as Results)}\n`,
  );
}
