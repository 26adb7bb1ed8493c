/**
 * `npm run bench`: toolgate side by side with casbin (priority model), cedar-wasm (pre-parsed,
 * statefulIsAuthorized) and a naive baseline at 10, 100, 1,000 and 10,000 tools and rules, plus the
 * gate's own costs (check(), resolve of 100,000 names, the canonical cache, executeToolCalls overhead).
 *
 * The measured code is compiled by tsc first (into node_modules/.cache/toolgate-bench). For each size,
 * one `node --expose-gc` child loads all four engines and checks that they agree on every call; then
 * each engine is timed in a child of its own, so the JIT state and heap of one engine or size do not
 * colour another, and the figures are those of plain compiled JavaScript (tsx's transform wraps closures in a
 * naming helper that adds its own cost; `--tsx` runs the children under tsx anyway). Every engine must
 * agree on every call of a size before that size is timed; a mismatch fails the run and nothing is
 * written. Writes bench/results.json and docs/bench.svg.
 *
 *   npm run bench -- [--sizes 10,100,1000,10000] [--repeat 1] [--budget-ms 1500] [--no-write] [--tsx]
 *   npm run bench -- --redraw      (the chart again from bench/results.json)
 *   npm run bench -- --only policy-diff   (toolgate diff of 1,000- and 10,000-rule files alone; writes nothing)
 *   npm run bench -- --only stores        (the shared stores against the real servers alone; writes nothing)
 *   npm run bench -- --only gateway       (the gateway over stdio against the upstream directly; writes nothing)
 *   TOOLGATE_BENCH_GATEWAY=stdio npm run bench -- --only gateway   (its stdio shapes alone: no HTTP, no pieces)
 *   npm run bench -- --only async [--sizes 1000,10000]   (the async tool beside the floor, toolgate alone; writes nothing)
 */
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chartSvg } from './chart.js';
import { ENGINE_NAMES, type EngineName } from './engines/engine.js';
import { benchExtras, type ExtrasResult } from './extras.js';
import { benchGateway, type GatewayResult } from './gateway.js';
import { sinkValue, type Timing } from './measure.js';
import { benchPolicyDiff, type PolicyDiffResult } from './policy-diff.js';
import { benchPolicyLoad, type PolicyLoadResult } from './policy-load.js';
import { benchQuickstart, type QuickstartResult } from './quickstart.js';
import { benchRunner, type RunnerResult } from './runner.js';
import { benchStores, storesTables, type StoresResult } from './stores.js';
import { agreeSize, DisagreementError, formatNs, timeEngine, type EngineTiming, type SizeResult } from './suite.js';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10,100,1000,10000' },
    repeat: { type: 'string', default: '1' },
    'budget-ms': { type: 'string', default: '1500' },
    'no-write': { type: 'boolean', default: false },
    tsx: { type: 'boolean', default: false },
    // redraw the chart from the results file, measuring nothing
    redraw: { type: 'boolean', default: false },
    // one part alone, printed, nothing written: policy-diff
    only: { type: 'string' },
    out: { type: 'string', default: 'bench/results.json' },
    chart: { type: 'string', default: 'docs/bench.svg' },
    // internal: run one part in this process and write its result to a file
    child: { type: 'string' },
    'result-file': { type: 'string' },
  },
});

const budgetMs = Number(args['budget-ms']);
const here = fileURLToPath(import.meta.url);
const BUILD = 'node_modules/.cache/toolgate-bench';

/** The node arguments that start a child: the compiled bench, or this file under tsx with `--tsx`. */
function childCommand(): string[] {
  if (here.endsWith('.js')) return ['--expose-gc', here];
  if (args.tsx) return [...process.execArgv, '--expose-gc', here];
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const built = spawnSync(process.execPath, [tsc, '-p', 'bench/tsconfig.json'], { stdio: 'inherit' });
  if (built.status !== 0) throw new Error('bench: tsc -p bench/tsconfig.json failed');
  // The build sits under node_modules, where Node stops looking for the package's "type": "module".
  writeFileSync(join(BUILD, 'package.json'), '{ "type": "module" }\n');
  // The policy-file loader reads the published schema relative to its own file.
  cpSync('schema', join(BUILD, 'schema'), { recursive: true });
  return ['--expose-gc', join(BUILD, 'bench', 'run.js')];
}
let command: string[] = [];
const log = (line: string): void => void process.stderr.write(`${line}\n`);

async function child(part: string, file: string): Promise<void> {
  const timing = { budgetMs };
  try {
    const [kind, size, engine] = part.split(':');
    const result =
      kind === 'extras'
        ? await benchExtras({ timing, log })
        : kind === 'quickstart'
          ? await benchQuickstart(Number(size), { timing, log, toolgateOnly: engine === 'toolgate' })
          : kind === 'runner'
            ? await benchRunner({ timing, log })
            : kind === 'policyload'
              ? benchPolicyLoad({ log })
              : kind === 'policydiff'
                ? await benchPolicyDiff({ rules: Number(size), log })
                : kind === 'stores'
                  ? await benchStores({ log })
                  : kind === 'gateway'
                    ? await benchGateway({ log })
                    : kind === 'agree'
                      ? await agreeSize(Number(size), { log })
                      : await timeEngine(Number(size), engine as EngineName, { timing, log });
    writeFileSync(file, JSON.stringify({ ok: true, result, sink: sinkValue() }));
  } catch (error) {
    writeFileSync(
      file,
      JSON.stringify({
        ok: false,
        disagreement: error instanceof DisagreementError,
        message: (error as Error).stack ?? String(error),
      }),
    );
    process.exitCode = 2;
  }
}

type ChildOutcome = { ok: true; result: unknown; sink: number } | { ok: false; disagreement: boolean; message: string };

function runChild(part: string): Promise<{ outcome: ChildOutcome | null; exit: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-bench-'));
  const file = join(dir, 'result.json');
  return new Promise((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      [...command, '--child', part, '--result-file', file, '--budget-ms', String(budgetMs)],
      {
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    proc.on('error', reject);
    proc.on('exit', (code, signal) => {
      let outcome: ChildOutcome | null = null;
      try {
        outcome = JSON.parse(readFileSync(file, 'utf8')) as ChildOutcome;
      } catch {
        outcome = null;
      }
      rmSync(dir, { recursive: true, force: true });
      resolve({ outcome, exit: signal ? `signal ${signal}` : `code ${code}` });
    });
  });
}

/** Runs a part in a child; a crash (not a disagreement) is retried once and noted. */
async function part<T>(name: string, notes: string[]): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const { outcome, exit } = await runChild(name);
    if (outcome?.ok) return outcome.result as T;
    if (outcome && outcome.disagreement) {
      log(outcome.message);
      log('bench FAILED: the engines disagree; no time is reported.');
      process.exit(1);
    }
    const why = outcome ? outcome.message : `the child process ended (${exit}) without a result`;
    if (attempt >= 2) throw new Error(`bench part ${name} failed twice: ${why}`);
    notes.push(`part ${name}: attempt ${attempt} failed (${why.split('\n')[0]}); retried`);
    log(`part ${name} failed (${why.split('\n')[0]}); retrying once`);
  }
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** With several runs, the figures the targets read are medians over the runs (the first run gives the rest). */
function medianExtras(runs: readonly ExtrasResult[]): ExtrasResult {
  const first = runs[0]!;
  const m = (pick: (x: ExtrasResult) => number): number => median(runs.map(pick));
  const mt = <T extends Timing>(pick: (x: ExtrasResult) => T): T => ({
    ...pick(first),
    p50: m((x) => pick(x).p50),
    p99: m((x) => pick(x).p99),
    mean: m((x) => pick(x).mean),
  });
  return {
    check: { ...mt((x) => x.check), names: first.check.names },
    resolve: {
      ...first.resolve,
      msMedian: m((x) => x.resolve.msMedian),
      msMin: Math.min(...runs.map((x) => x.resolve.msMin)),
      msMax: Math.max(...runs.map((x) => x.resolve.msMax)),
      cpuMsMedian: m((x) => x.resolve.cpuMsMedian),
      otherOrder: {
        msMedian: m((x) => x.resolve.otherOrder.msMedian),
        cpuMsMedian: m((x) => x.resolve.otherOrder.cpuMsMedian),
      },
    },
    canonicalCache: {
      ...first.canonicalCache,
      maxSize: Math.max(...runs.map((x) => x.canonicalCache.maxSize)),
      nsPerName: m((x) => x.canonicalCache.nsPerName),
    },
    dispatch: {
      ...first.dispatch,
      direct: mt((x) => x.dispatch.direct),
      precheck: mt((x) => x.dispatch.precheck),
      single: mt((x) => x.dispatch.single),
      batched16: mt((x) => x.dispatch.batched16),
      asyncDirect: mt((x) => x.dispatch.asyncDirect),
      asyncSingle: mt((x) => x.dispatch.asyncSingle),
      overheadNs: m((x) => x.dispatch.overheadNs),
      overheadBatchedNs: m((x) => x.dispatch.overheadBatchedNs),
      asyncOverheadNs: m((x) => x.dispatch.asyncOverheadNs),
    },
  };
}

const QUICK_KEYS = [
  'invoke',
  'plan50',
  'execute',
  'casbin',
  'cedar',
  'floor',
  'asyncInvoke',
  'asyncExecute',
  'asyncExecuteRepeated',
] as const;

/** Per size, the median of each figure over the runs, with the spread of the p50s kept. */
type QuickstartMedian = QuickstartResult & {
  readonly spread: Readonly<Record<(typeof QUICK_KEYS)[number], readonly number[]>>;
  /**
   * async invoke / floor and async executeToolCalls / floor (texts never seen before; `repeated`: the mix's texts
   * that come back), each run's ratio, then their median.
   */
  readonly ratios: {
    readonly invoke: number;
    readonly execute: number;
    readonly repeated: number;
    readonly runs: readonly (readonly [number, number, number])[];
  };
};

function medianQuickstart(runs: readonly QuickstartResult[]): QuickstartMedian {
  const first = runs[0]!;
  const perRun = runs.map(
    (r) =>
      [
        r.asyncInvoke.p50 / r.floor.p50,
        r.asyncExecute.p50 / r.floor.p50,
        r.asyncExecuteRepeated.p50 / r.floor.p50,
      ] as const,
  );
  const out: Record<string, unknown> = {
    ...first,
    setupMs: median(runs.map((r) => r.setupMs)),
    ratios: {
      invoke: median(perRun.map((r) => r[0])),
      execute: median(perRun.map((r) => r[1])),
      repeated: median(perRun.map((r) => r[2])),
      runs: perRun,
    },
    breakdown: {
      decide: median(runs.map((r) => r.breakdown.decide)),
      noLayers: median(runs.map((r) => r.breakdown.noLayers)),
      noRules: median(runs.map((r) => r.breakdown.noRules)),
    },
  };
  const parsing = runs.flatMap((r) => (r.floorParsing ? [r.floorParsing.p50] : []));
  if (parsing.length > 0) out['floorParsing'] = { ...first.floorParsing, p50: median(parsing) };
  const spread: Record<string, number[]> = {};
  for (const key of QUICK_KEYS) {
    out[key] = {
      ...first[key],
      p50: median(runs.map((r) => r[key].p50)),
      p99: median(runs.map((r) => r[key].p99)),
      mean: median(runs.map((r) => r[key].mean)),
    };
    spread[key] = runs.map((r) => r[key].p50);
  }
  return { ...(out as unknown as QuickstartMedian), spread: spread as Record<(typeof QUICK_KEYS)[number], number[]> };
}

interface Target {
  readonly id: string;
  readonly description: string;
  readonly target: string;
  readonly measured: string;
  readonly met: boolean;
}

/** `toolgate diff` of two 1,000- and two 10,000-rule files differing in ten rules: each size in a child, median of the runs. */
async function policyDiffRuns(repeat: number, notes: string[]): Promise<PolicyDiffResult[]> {
  const out: PolicyDiffResult[] = [];
  for (const size of [1000, 10000]) {
    const runs: PolicyDiffResult[] = [];
    for (let r = 0; r < repeat; r++) runs.push(await part<PolicyDiffResult>(`policydiff:${size}`, notes));
    out.push({ ...runs[0]!, totalMs: median(runs.map((x) => x.totalMs)), diffMs: median(runs.map((x) => x.diffMs)) });
  }
  return out;
}

function policyDiffTargets(diffs: readonly PolicyDiffResult[]): Target[] {
  return diffs.map((d) => {
    const limit = d.rules >= 10_000 ? 20_000 : 2000;
    return {
      id: `policy-diff-${d.rules >= 10_000 ? '10k' : '1k'}`,
      description: `toolgate diff of two ${d.rules.toLocaleString('en')}-rule files differing in ${d.changedRules} rules (both loaded, then diffed)`,
      target: `< ${limit / 1000} s`,
      measured: `${(d.totalMs / 1000).toFixed(2)} s (load ${(d.loadMs / 1000).toFixed(2)} s, diff ${(d.diffMs / 1000).toFixed(2)} s; ${d.changes} changes, ${d.uncertain} may change)`,
      met: d.totalMs < limit,
    };
  });
}

/** The stores part, `repeat` times; the median run is the one whose Redis-limited invoke is the median. */
async function storesRuns(repeat: number, notes: string[]): Promise<{ runs: StoresResult[]; median: StoresResult }> {
  const runs: StoresResult[] = [];
  for (let r = 0; r < repeat; r++) runs.push(await part<StoresResult>('stores', notes));
  const byInvoke = [...runs].sort((a, b) => a.invoke.redis.p50 - b.invoke.redis.p50);
  return { runs, median: byInvoke[Math.floor((byInvoke.length - 1) / 2)]! };
}

/** Issue 25 target 4, each figure beside its floor measured in the same run. */
function storesTargets({ runs, median: m }: { runs: readonly StoresResult[]; median: StoresResult }): Target[] {
  const rate = median(runs.map((r) => r.throughput.redis.perSecond));
  const exact = runs.every((r) => r.throughput.redis.exact === true);
  return [
    {
      id: 'redis-limit-p50',
      description:
        'invoke with Redis-backed limits (two limits, one script: one round trip), README shape, p50, beside one Redis PING',
      target: '≤ 80 µs',
      measured: `${m.invoke.redis.p50.toFixed(1)} µs (floor: PING ${m.floors.redisPing.p50.toFixed(1)} µs; no limiter ${m.invoke.none.p50.toFixed(1)} µs)`,
      met: m.invoke.redis.p50 <= 80,
    },
    {
      id: 'redis-shared-throughput',
      description: `${m.throughput.redis.processes} worker processes sharing one Redis counter, ${m.throughput.redis.inFlight} requests in flight each, total exact`,
      target: '≥ 40,000 decisions/s, exact',
      measured: `${Math.round(rate).toLocaleString('en')} decisions/s, ${exact ? 'exact' : 'NOT EXACT'} (PostgreSQL counter ${Math.round(median(runs.map((r) => r.throughput.postgres.perSecond))).toLocaleString('en')}/s; own in-memory counters ${Math.round(median(runs.map((r) => r.throughput.memory.perSecond))).toLocaleString('en')}/s)`,
      met: rate >= 40_000 && exact,
    },
  ];
}

/**
 * The floor handed the model's text (it parses the fresh argument text first): the same work before the gate begins,
 * beside `executeToolCalls` of fresh texts. Told, never the target's floor. Empty for a results file without it.
 */
function parsingText(q: QuickstartMedian): string {
  const p = q.floorParsing;
  if (!p) return '';
  return `; the floor parsing the same fresh text ${formatNs(p.p50)}, executeToolCalls ${(q.asyncExecute.p50 / p.p50).toFixed(2)}× it`;
}

/** Where an async invoke's time goes, by the bench's own subtractions (bench/quickstart.ts `breakdown`). */
function breakdownText(q: QuickstartMedian): string {
  const b = q.breakdown;
  return (
    `breakdown (p50 differences): find + parse + snapshot + validate + Decision ${formatNs(b.noRules)}, rules ${formatNs(b.noLayers - b.noRules)}, ` +
    `allowlist ${formatNs(b.decide - b.noLayers)}, dispatch + execute + result ${formatNs(q.asyncInvoke.p50 - b.decide)}, ` +
    `executeToolCalls' reading and shaping ${formatNs(q.asyncExecute.p50 - q.asyncInvoke.p50)} ` +
    `(${formatNs(q.asyncExecuteRepeated.p50 - q.asyncInvoke.p50)} with texts that come back)`
  );
}

/** The gateway part, `repeat` times; each figure the median of the runs. */
async function gatewayRuns(repeat: number, notes: string[]): Promise<GatewayResult[]> {
  const runs: GatewayResult[] = [];
  for (let r = 0; r < repeat; r++) runs.push(await part<GatewayResult>('gateway', notes));
  return runs;
}

const GATEWAY_SHAPES = [
  ['toolsCall', 'tools/call'],
  ['resourcesRead', 'resources/read'],
  ['toolsList', 'tools/list'],
] as const;

/** Issue 25.2: per shape, the gateway with --audit over the upstream directly, p50 and p99, each run's difference then their median. */
function gatewayTargets(runs: readonly GatewayResult[]): Target[] {
  return GATEWAY_SHAPES.map(([key, label]) => {
    const p50 = median(runs.map((r) => r[key].gateway.p50 - r[key].direct.p50));
    const p99 = median(runs.map((r) => r[key].gateway.p99 - r[key].direct.p99));
    const m = runs.map((r) => r[key]);
    return {
      id: `gateway-stdio-${label.replace('/', '-')}`,
      description: `the gateway over stdio with --audit, ${label}, over the same upstream called directly (sequential requests, p50 / p99)`,
      target: '≤ +100 µs p50, ≤ +1 ms p99',
      measured: `+${p50.toFixed(0)} µs p50, +${(p99 / 1000).toFixed(2)} ms p99 (direct ${median(m.map((x) => x.direct.p50)).toFixed(0)} µs, gateway ${median(m.map((x) => x.gateway.p50)).toFixed(0)} µs, without audit ${median(m.map((x) => x.gatewayNoAudit.p50)).toFixed(0)} µs; the floor of two stdio hops here, a bare relay process: +${median(m.map((x) => (x.relay?.p50 ?? NaN) - x.direct.p50)).toFixed(0)} µs${key === 'toolsCall' ? `; ${stdioCpu(runs)}` : ''})`,
      met: p50 <= 100 && p99 <= 1000,
    };
  }).concat(
    // Absent in a stdio-only run (TOOLGATE_BENCH_GATEWAY=stdio).
    (runs.every((r) => r.http !== undefined) ? (['legacy', 'modern'] as const) : []).flatMap((era) =>
      (['gateway', 'gatewayJwt'] as const).map((side) => {
        const label = era === 'legacy' ? '2025-11-25 session' : '2026-07-28 (stateless)';
        const p50 = median(runs.map((r) => r.http![era][side].p50 - r.http![era].direct.p50));
        const m = runs.map((r) => r.http![era]);
        return {
          id: `gateway-http-${era}${side === 'gatewayJwt' ? '-jwt' : ''}`,
          description: `the gateway over Streamable HTTP${side === 'gatewayJwt' ? ' verifying a JWT' : ''}, tools/call, ${label}, over the same upstream called directly over HTTP (sequential requests, p50)`,
          target: '≤ +300 µs p50',
          measured: `+${p50.toFixed(0)} µs p50 (direct ${median(m.map((x) => x.direct.p50)).toFixed(0)} µs, gateway ${median(m.map((x) => x[side].p50)).toFixed(0)} µs; the floor of any HTTP hop here, a bare relay process: +${median(m.map((x) => x.relay.p50 - x.direct.p50)).toFixed(0)} µs; gateway CPU ${median(m.map((x) => x.cpu.gateway ?? NaN)).toFixed(0)} µs per call, the upstream's own ${median(m.map((x) => x.cpu.upstream ?? NaN)).toFixed(0)} µs, the bare relay's ${median(m.map((x) => x.cpu.relay ?? NaN)).toFixed(0)} µs)`,
          met: p50 <= 300,
        };
      }),
    ),
  );
}

/** The stdio tools/call row's CPU per call: the gateway's (--audit), the upstream's own and the bare relay's (the floor), medians of the runs. */
function stdioCpu(runs: readonly GatewayResult[]): string {
  const m = (f: (r: GatewayResult) => number | null | undefined) => median(runs.map((r) => f(r) ?? NaN)).toFixed(0);
  return `gateway CPU ${m((r) => r.cpu.gateway)} µs per tools/call (without audit ${m((r) => r.cpu.gatewayNoAudit)}), the upstream's own ${m((r) => r.cpu.upstream)} µs, the bare relay's ${m((r) => r.cpu.relay)} µs`;
}

/** The gateway's pieces measured in process (medians of the runs), one line. */
function gatewayPieces(runs: readonly GatewayResult[]): string {
  const m = (f: (r: GatewayResult) => number, digits = 1) => median(runs.map(f)).toFixed(digits);
  const cpu = `stdio ${stdioCpu(runs)}`;
  // A stdio-only run (TOOLGATE_BENCH_GATEWAY=stdio) measured no pieces.
  if (runs.some((r) => r.http === undefined)) return cpu;
  return `parse ${m((r) => r.parseUs)} µs, SDK validation ${m((r) => r.validateUs)} µs per side, decide ${m((r) => r.decideUs)} µs, audit record ${m((r) => r.auditUs)} µs, definition pin ${m((r) => r.pinUs)} µs uncached / ${m((r) => r.pinCachedUs, 2)} µs cached, stdio pipe round trip ${m((r) => r.pipeUs, 0)} µs; ${cpu}`;
}

async function main(): Promise<void> {
  if (args.child) return child(args.child, args['result-file']!);
  if (args.redraw) {
    const saved = JSON.parse(readFileSync(args.out, 'utf8')) as {
      timings: EngineTiming[];
      quickstart?: QuickstartResult[];
    };
    writeFileSync(args.chart, await chartSvg(saved.timings, saved.quickstart ?? []));
    log(`redrew ${args.chart} from ${args.out}`);
    return;
  }
  const sizes = args.sizes.split(',').filter(Boolean).map(Number);
  const repeat = Number(args.repeat);
  const notes: string[] = [];
  command = childCommand();
  if (args.only === 'stores') {
    const stores = await storesRuns(repeat, notes);
    log(storesTables(stores.median));
    for (const t of storesTargets(stores))
      log(`${t.met ? 'met ' : 'MISS'}  ${t.description}: ${t.measured} (target ${t.target})`);
    log(
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (${cpus().length} cores, shared); ${idlePolicy()}`,
    );
    return;
  }
  if (args.only === 'gateway') {
    const runs = await gatewayRuns(repeat, notes);
    for (const t of gatewayTargets(runs))
      log(`${t.met ? 'met ' : 'MISS'}  ${t.description}: ${t.measured} (target ${t.target})`);
    log(
      `${gatewayPieces(runs)}; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (${cpus().length} cores, shared); ${idlePolicy()}`,
    );
    return;
  }
  if (args.only === 'async') {
    const only = args.sizes === '10,100,1000,10000' ? [1000, 10000] : sizes;
    for (const size of only) {
      const runs: QuickstartResult[] = [];
      for (let r = 0; r < repeat; r++) runs.push(await part<QuickstartResult>(`quickstart:${size}:toolgate`, notes));
      const q = medianQuickstart(runs);
      log(
        `${size.toLocaleString('en')} tools & rules: floor ${formatNs(q.floor.p50)}, invoke ${formatNs(q.asyncInvoke.p50)} (${q.ratios.invoke.toFixed(2)}× floor; runs ${q.ratios.runs.map((x) => x[0].toFixed(2)).join(', ')}), ` +
          `executeToolCalls, texts never seen before ${formatNs(q.asyncExecute.p50)} (${q.ratios.execute.toFixed(2)}×; runs ${q.ratios.runs.map((x) => x[1].toFixed(2)).join(', ')}), ` +
          `texts that come back ${formatNs(q.asyncExecuteRepeated.p50)} (${q.ratios.repeated.toFixed(2)}×)${parsingText(q)}; sync invoke ${formatNs(q.invoke.p50)}`,
      );
      log(`  ${breakdownText(q)}`);
    }
    log(
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (${cpus().length} cores, shared); ${idlePolicy()}`,
    );
    return;
  }
  if (args.only !== undefined) {
    if (args.only !== 'policy-diff')
      throw new Error(`--only: expected policy-diff, stores, gateway or async, got ${args.only}`);
    const diffs = await policyDiffRuns(repeat, notes);
    for (const t of policyDiffTargets(diffs))
      log(`${t.met ? 'met ' : 'MISS'}  ${t.description}: ${t.measured} (target ${t.target})`);
    return;
  }
  const startLoad = loadavg();
  const started = new Date();
  const idle = idlePolicy();
  log(
    `toolgate bench: sizes ${sizes.join(', ')}; ${repeat} run(s); ${budgetMs} ms per engine and size; load average ${startLoad.map((l) => l.toFixed(2)).join(' ')}; ${idle}`,
  );
  const runs: SizeResult[][] = [];
  for (let r = 0; r < repeat; r++) {
    const run: SizeResult[] = [];
    for (const size of sizes) {
      // Agreement first, in one process with all four engines; then each engine is timed in a process of
      // its own, so none is timed beside the heap of the others.
      const agreed = await part<Omit<SizeResult, 'timings'>>(`agree:${size}`, notes);
      const timings: EngineTiming[] = [];
      for (const engine of ENGINE_NAMES) timings.push(await part<EngineTiming>(`time:${size}:${engine}`, notes));
      run.push({ ...agreed, timings });
    }
    runs.push(run);
  }
  // The shapes users write: the README quick start, end to end, with casbin and Cedar in the same process.
  const quickRuns: QuickstartResult[][] = [];
  for (let r = 0; r < repeat; r++) {
    const run: QuickstartResult[] = [];
    for (const size of sizes) run.push(await part<QuickstartResult>(`quickstart:${size}`, notes));
    quickRuns.push(run);
  }
  const quickstart = quickRuns[0]!.map((first) =>
    medianQuickstart(quickRuns.map((run) => run.find((q) => q.size === first.size)!)),
  );
  const extrasRuns: ExtrasResult[] = [];
  for (let r = 0; r < repeat; r++) extrasRuns.push(await part<ExtrasResult>('extras', notes));
  const extras = medianExtras(extrasRuns);
  const runnerRuns: RunnerResult[] = [];
  const loadRuns: PolicyLoadResult[] = [];
  for (let r = 0; r < repeat; r++) {
    runnerRuns.push(await part<RunnerResult>('runner', notes));
    loadRuns.push(await part<PolicyLoadResult>('policyload', notes));
  }
  const policyDiff = await policyDiffRuns(repeat, notes);
  const stores = await storesRuns(repeat, notes);
  const gateway = await gatewayRuns(repeat, notes);
  const runner: RunnerResult = {
    ...runnerRuns[0]!,
    byTurns: runnerRuns[0]!.byTurns.map((t, i) => ({
      ...t,
      perTurn: { ...t.perTurn, p50: median(runnerRuns.map((r) => r.byTurns[i]!.perTurn.p50)) },
    })),
  };
  const policyLoad: PolicyLoadResult = {
    ...loadRuns[0]!,
    msMedian: median(loadRuns.map((l) => l.msMedian)),
    cpuMsMedian: median(loadRuns.map((l) => l.cpuMsMedian)),
  };
  const endLoad = loadavg();

  // With several runs, each figure is the median of the runs' figures, and the spread is kept.
  const timings: (EngineTiming & {
    readonly spread: { readonly p50: readonly number[]; readonly p99: readonly number[] };
  })[] = [];
  for (const first of runs[0]!) {
    for (const t of first.timings) {
      const all = runs.map((run) =>
        run.find((s) => s.size === first.size)!.timings.find((x) => x.engine === t.engine)!,
      );
      timings.push({
        ...t,
        p50: median(all.map((x) => x.p50)),
        p99: median(all.map((x) => x.p99)),
        mean: median(all.map((x) => x.mean)),
        spread: { p50: all.map((x) => x.p50), p99: all.map((x) => x.p99) },
      });
    }
  }
  const at = (engine: EngineName, size: number): EngineTiming | undefined =>
    timings.find((t) => t.engine === engine && t.size === size);

  // The headline: the shapes users write.
  const lines: string[] = [
    '',
    'README quick-start shape, end to end (p50)   invoke   plan of 50/request   executeToolCalls      casbin   × invoke       cedar   × invoke',
  ];
  for (const q of quickstart) {
    lines.push(
      `  ${q.size.toLocaleString('en').padStart(6)} tools & rules ${formatNs(q.invoke.p50).padStart(26)} ${formatNs(q.plan50.p50).padStart(20)} ${formatNs(q.execute.p50).padStart(18)} ` +
        `${formatNs(q.casbin.p50).padStart(11)} ${`${(q.casbin.p50 / q.invoke.p50).toFixed(0)}×`.padStart(10)} ${formatNs(q.cedar.p50).padStart(11)} ${`${(q.cedar.p50 / q.invoke.p50).toFixed(0)}×`.padStart(10)}`,
    );
  }
  lines.push(
    '',
    'async no-op tool, README shape, beside the floor (bench/floor.ts) in the same process (p50)   floor   invoke   × floor   executeToolCalls   × floor   (texts that come back   × floor)',
  );
  for (const q of quickstart)
    lines.push(
      `  ${q.size.toLocaleString('en').padStart(6)} tools & rules ${formatNs(q.floor.p50).padStart(64)} ${formatNs(q.asyncInvoke.p50).padStart(8)} ${`${q.ratios.invoke.toFixed(2)}×`.padStart(9)} ${formatNs(q.asyncExecute.p50).padStart(18)} ${`${q.ratios.execute.toFixed(2)}×`.padStart(9)} ${formatNs(q.asyncExecuteRepeated.p50).padStart(23)} ${`${q.ratios.repeated.toFixed(2)}×`.padStart(8)}`,
    );
  for (const q of quickstart) lines.push(`  ${q.size.toLocaleString('en')}: ${breakdownText(q)}`);
  lines.push('', 'per decision        p50          p99     × toolgate (p50)   samples × batch');
  for (const size of sizes) {
    lines.push(
      `${size.toLocaleString('en')} tools, ${size.toLocaleString('en')} rules (${runs[0]!.find((s) => s.size === size)!.calls} calls in the mix, all four engines agree)`,
    );
    const base = at('toolgate', size)!;
    for (const t of timings.filter((x) => x.size === size)) {
      const ratio = t.engine === 'toolgate' ? '' : `${(t.p50 / base.p50).toFixed(t.p50 / base.p50 < 10 ? 1 : 0)}×`;
      lines.push(
        `  ${t.engine.padEnd(10)}${formatNs(t.p50).padStart(10)}  ${formatNs(t.p99).padStart(11)}  ${ratio.padStart(12)}         ${t.samples} × ${t.batch}`,
      );
    }
  }
  lines.push(
    '',
    `check() on a resolved allowlist (${extras.check.names} names): p50 ${extras.check.p50.toFixed(1)} ns, p99 ${extras.check.p99.toFixed(1)} ns`,
    `ToolAllowlist.resolve of ${extras.resolve.names.toLocaleString('en')} names: median ${extras.resolve.msMedian.toFixed(1)} ms (CPU ${extras.resolve.cpuMsMedian.toFixed(1)} ms) over ${extras.resolve.runs} runs ` +
      `(${extras.resolve.msMin.toFixed(1)}–${extras.resolve.msMax.toFixed(1)}), heap retained ${extras.resolve.retainedBytes === null ? 'n/a (needs --expose-gc)' : `${(extras.resolve.retainedBytes / 1048576).toFixed(1)} MiB`}; ` +
      `layers in another order than the declaration's ${extras.resolve.otherOrder.msMedian.toFixed(1)} ms (CPU ${extras.resolve.otherOrder.cpuMsMedian.toFixed(1)} ms)`,
    `canonical() on ${extras.canonicalCache.names.toLocaleString('en')} unique names: cache at most ${extras.canonicalCache.maxSize} entries (limit ${extras.canonicalCache.limit}), ` +
      `${extras.canonicalCache.nsPerName.toFixed(0)} ns a name, heap growth ${extras.canonicalCache.heapGrowthBytes === null ? 'n/a' : `${(extras.canonicalCache.heapGrowthBytes / 1024).toFixed(0)} KiB`}`,
    `executeToolCalls, no-op tool (${extras.dispatch.size} tools & rules): ${formatNs(extras.dispatch.single.p50)} a call alone, ${formatNs(extras.dispatch.batched16.p50)} a call in batches of 16; ` +
      `the no-op called directly ${formatNs(extras.dispatch.direct.p50)}; the decision alone ${formatNs(extras.dispatch.precheck.p50)}`,
    `executeToolCalls, async no-op: ${formatNs(extras.dispatch.asyncSingle.p50)} a call alone, the no-op called directly ${formatNs(extras.dispatch.asyncDirect.p50)}, ` +
      `overhead ${formatNs(extras.dispatch.asyncOverheadNs)} (the tool's timeout is armed for a promise)`,
  );

  lines.push(
    `AgentRunner, one allowed call per model turn: ${runner.byTurns.map((t) => `${formatNs(t.perTurn.p50)} a turn over ${t.turns} turns`).join(', ')}; registry.invoke of that call ${formatNs(runner.invoke.p50)}`,
    `policy file of ${policyLoad.rules.toLocaleString('en')} rules (${(policyLoad.bytes / 1024).toFixed(0)} KiB YAML): median ${policyLoad.msMedian.toFixed(0)} ms (CPU ${policyLoad.cpuMsMedian.toFixed(0)} ms) over ${policyLoad.runs} loads`,
  );
  const tg1k = at('toolgate', 1000);
  const tg10k = at('toolgate', 10000);
  const q1k = quickstart.find((q) => q.size === 1000);
  const q10k = quickstart.find((q) => q.size === 10000);
  const targets: Target[] = [];
  const ratio = (x: number): string => `${x.toFixed(2)}×`;
  if (q1k) {
    targets.push(
      {
        id: 'quickstart-invoke-1k',
        description: 'invoke of a no-op tool, README quick-start shape, 1,000 tools & rules, p50',
        target: '≤ 2 µs',
        measured: formatNs(q1k.invoke.p50),
        met: q1k.invoke.p50 <= 2000,
      },
      {
        id: 'quickstart-plan50-1k',
        description: 'the same with a fresh 50-name plan array per request, p50',
        target: '≤ 3 µs',
        measured: formatNs(q1k.plan50.p50),
        met: q1k.plan50.p50 <= 3000,
      },
    );
    if (q10k)
      targets.push(
        {
          id: 'quickstart-invoke-10k',
          description: 'quick-start invoke at 10,000 against 1,000, p50',
          target: '≤ 1.5×',
          measured: `${ratio(q10k.invoke.p50 / q1k.invoke.p50)} (${formatNs(q10k.invoke.p50)})`,
          met: q10k.invoke.p50 <= 1.5 * q1k.invoke.p50,
        },
        {
          id: 'quickstart-plan50-10k',
          description: 'plan of 50 per request at 10,000 against 1,000, p50',
          target: '≤ 1.5×',
          measured: `${ratio(q10k.plan50.p50 / q1k.plan50.p50)} (${formatNs(q10k.plan50.p50)})`,
          met: q10k.plan50.p50 <= 1.5 * q1k.plan50.p50,
        },
      );
    targets.push(
      {
        id: 'casbin-quickstart-1k',
        description: 'casbin priority / toolgate invoke, quick-start shape at 1,000, p50',
        target: '≥ 300×',
        measured: `${(q1k.casbin.p50 / q1k.invoke.p50).toFixed(0)}×`,
        met: q1k.casbin.p50 / q1k.invoke.p50 >= 300,
      },
      {
        id: 'cedar-quickstart-1k',
        description: 'cedar-wasm / toolgate invoke, quick-start shape at 1,000, p50',
        target: '≥ 1,000×',
        measured: `${(q1k.cedar.p50 / q1k.invoke.p50).toFixed(0)}×`,
        met: q1k.cedar.p50 / q1k.invoke.p50 >= 1000,
      },
    );
  }
  for (const q of [q1k, q10k])
    if (q)
      targets.push(
        {
          id: `async-invoke-${q.size >= 10_000 ? '10k' : '1k'}`,
          description: `invoke of an async no-op tool, README shape, ${q.size.toLocaleString('en')} tools & rules, p50, beside the floor (bench/floor.ts) in the same process`,
          target: '≤ 3× floor',
          measured: `${ratio(q.ratios.invoke)} (${formatNs(q.asyncInvoke.p50)} against ${formatNs(q.floor.p50)}; per run ${q.ratios.runs.map((r) => r[0].toFixed(2)).join(', ')})`,
          met: q.ratios.invoke <= 3,
        },
        {
          id: `async-execute-${q.size >= 10_000 ? '10k' : '1k'}`,
          description: `executeToolCalls of one call to an async no-op tool, README shape, ${q.size.toLocaleString('en')} tools & rules, argument texts never seen before (a model's calls), p50, beside the floor`,
          target: '≤ 3.5× floor',
          measured: `${ratio(q.ratios.execute)} (${formatNs(q.asyncExecute.p50)}; per run ${q.ratios.runs.map((r) => r[1].toFixed(2)).join(', ')}; texts that come back ${ratio(q.ratios.repeated)}, ${formatNs(q.asyncExecuteRepeated.p50)}${parsingText(q)})`,
          met: q.ratios.execute <= 3.5,
        },
      );
  for (const t of [tg1k, tg10k])
    if (t)
      targets.push({
        id: `decision-${t.size}`,
        description: `full decision (sync path, frozen layers) at ${t.size.toLocaleString('en')} tools & rules, p50`,
        target: '≤ 0.6 µs',
        measured: formatNs(t.p50),
        met: t.p50 <= 600,
      });
  targets.push({
    id: 'check',
    description: 'check() on a resolved allowlist, p50',
    target: '≤ 50 ns',
    measured: `${extras.check.p50.toFixed(1)} ns`,
    met: extras.check.p50 <= 50,
  });
  targets.push({
    id: 'resolve-100k',
    description: `ToolAllowlist.resolve of ${extras.resolve.names.toLocaleString('en')} names, median, the layers in the declaration's order and in another`,
    target: '≤ 100 ms',
    measured: `${extras.resolve.msMedian.toFixed(1)} ms (CPU ${extras.resolve.cpuMsMedian.toFixed(1)} ms); in another order ${extras.resolve.otherOrder.msMedian.toFixed(1)} ms (CPU ${extras.resolve.otherOrder.cpuMsMedian.toFixed(1)} ms)`,
    met: Math.max(extras.resolve.msMedian, extras.resolve.otherOrder.msMedian) <= 100,
  });
  if (tg1k) {
    const casbin = at('casbin', 1000);
    if (casbin)
      targets.push({
        id: 'casbin-1k',
        description: 'casbin priority / toolgate full decision at 1,000, p50',
        target: '≥ 100×',
        measured: `${(casbin.p50 / tg1k.p50).toFixed(0)}×`,
        met: casbin.p50 / tg1k.p50 >= 100,
      });
  }
  const fewTurns = runner.byTurns[0]!;
  const manyTurns = runner.byTurns[runner.byTurns.length - 1]!;
  targets.push(
    {
      id: 'runner-turn',
      description: `AgentRunner per model turn with one tool call, model excluded, ${fewTurns.turns}-turn runs, p50`,
      target: '≤ 10 µs',
      measured: formatNs(fewTurns.perTurn.p50),
      met: fewTurns.perTurn.p50 <= 10_000,
    },
    {
      id: 'runner-linear',
      description: `AgentRunner per turn at ${manyTurns.turns} turns against ${fewTurns.turns} (linear: a turn costs the same however long the run)`,
      target: '≤ 1.5×',
      measured: `${(manyTurns.perTurn.p50 / fewTurns.perTurn.p50).toFixed(2)}× (${formatNs(manyTurns.perTurn.p50)})`,
      met: manyTurns.perTurn.p50 <= 1.5 * fewTurns.perTurn.p50,
    },
    {
      id: 'policy-load-10k',
      description: `a ${policyLoad.rules.toLocaleString('en')}-rule YAML policy file loads, median`,
      target: '≤ 500 ms',
      measured: `${policyLoad.msMedian.toFixed(0)} ms (CPU ${policyLoad.cpuMsMedian.toFixed(0)} ms)`,
      met: policyLoad.msMedian <= 500,
    },
  );
  targets.push(...policyDiffTargets(policyDiff));
  targets.push(...storesTargets(stores));
  targets.push(...gatewayTargets(gateway));
  targets.push({
    id: 'dispatch-overhead',
    description: 'executeToolCalls overhead on a no-op tool, one call (p50 − direct p50)',
    target: '< 3 µs',
    measured: formatNs(extras.dispatch.overheadNs),
    met: extras.dispatch.overheadNs < 3000,
  });
  targets.push({
    id: 'canonical-cache',
    description: `canonical cache under ${extras.canonicalCache.names.toLocaleString('en')} unique names`,
    target: `≤ ${extras.canonicalCache.limit} entries`,
    measured: `${extras.canonicalCache.maxSize} entries`,
    met: extras.canonicalCache.maxSize <= extras.canonicalCache.limit,
  });
  lines.push('', 'shared stores (PostgreSQL and Redis on this machine), the median run', storesTables(stores.median));
  lines.push('', 'targets');
  for (const t of targets)
    lines.push(`  ${t.met ? 'met ' : 'MISS'}  ${t.description}: ${t.measured} (target ${t.target})`);
  if (notes.length) lines.push('', 'notes', ...notes.map((n) => `  ${n}`));
  lines.push(
    '',
    `load average ${startLoad.map((l) => l.toFixed(2)).join(' ')} at the start, ${endLoad.map((l) => l.toFixed(2)).join(' ')} at the end (${cpus().length} cores, shared); ${idle}`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);

  if (args['no-write']) return;
  const results = {
    generated: started.toISOString(),
    node: process.version,
    cpu: `${cpus().length} × ${cpus()[0]?.model ?? 'unknown'}`,
    loadAverage: { start: startLoad, end: endLoad },
    idle,
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    children: `node ${command.join(' ')} --child <size|extras>`.replace(process.cwd() + '/', ''),
    method:
      'Per engine and size: warm-up, then samples of a batch of decisions timed with process.hrtime.bigint; ns per decision = batch time / batch size; p50 and p99 over samples ' +
      '(for batches > 1, p99 is of batch means). The decision mix cycles through calls that are permitted, refused by each allowlist layer, unknown, ' +
      'in other spellings, and decided by allow rules, deny rules and the deny fallback. With repeat > 1 each figure is the median of the runs.',
    repeat,
    budgetMsPerEngineAndSize: budgetMs,
    sizes: runs[0]!.map((s) => ({ size: s.size, rules: s.rules, calls: s.calls, agreement: s.agreement })),
    quickstart,
    runner,
    policyLoad,
    policyDiff,
    stores,
    gateway,
    timings,
    extras,
    extrasSpread: {
      checkP50: extrasRuns.map((x) => x.check.p50),
      dispatchOverheadNs: extrasRuns.map((x) => x.dispatch.overheadNs),
      dispatchOverheadBatchedNs: extrasRuns.map((x) => x.dispatch.overheadBatchedNs),
      precheckP50: extrasRuns.map((x) => x.dispatch.precheck.p50),
      resolveMsMedian: extrasRuns.map((x) => x.resolve.msMedian),
    },
    targets,
    notes,
  };
  writeFileSync(args.out, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(args.chart, await chartSvg(timings, quickstart));
  log(`wrote ${args.out} and ${args.chart}`);
}

await main();

/**
 * How this machine's cores idle, where Linux says: a virtual machine's core that halts when idle is woken by its
 * host, and each process hop (a stdio or HTTP relay, a Redis round trip) waits for that. On one 2-core VM of ours a
 * Redis `PING` took 71 µs p50 with the guest's halt polling off (`guest_halt_poll_ns` 0) and 23 µs with the kernel's
 * default (200,000 ns) or another core busy: read every hop's figure beside this.
 */
function idlePolicy(): string {
  const read = (path: string): string | undefined => {
    try {
      return readFileSync(path, 'utf8').trim();
    } catch {
      return undefined;
    }
  };
  const driver = read('/sys/devices/system/cpu/cpuidle/current_driver');
  const poll = read('/sys/module/haltpoll/parameters/guest_halt_poll_ns');
  if (driver === undefined) return 'idle: no cpuidle driver readable';
  return `idle: cpuidle ${driver}${poll === undefined ? '' : `, guest halt polling ${Number(poll).toLocaleString('en-US')} ns`}`;
}
