/**
 * One size of the side-by-side comparison: build the scenario, load it into every engine, check that
 * all engines agree on every call of the mix (a mismatch throws), then time each engine on that mix.
 */
import { checkAgreement, type Agreement, type Mismatch } from './agree.js';
import { casbinEngine } from './engines/casbin.js';
import { cedarEngine } from './engines/cedar.js';
import type { Engine, EngineFactory, EngineName } from './engines/engine.js';
import { naiveEngine } from './engines/naive.js';
import { toolgateEngine } from './engines/toolgate.js';
import { measure, type MeasureOptions, type Timing } from './measure.js';
import { buildScenario, type Scenario } from './scenario.js';

export const ENGINES: Readonly<Record<EngineName, EngineFactory>> = {
  toolgate: toolgateEngine,
  naive: naiveEngine,
  casbin: casbinEngine,
  cedar: cedarEngine,
};

export interface SizeOptions {
  /** Calls in the decision mix. @default 1024 (512 from 10,000 rules on: casbin and Cedar take tens of ms a call there) */
  readonly calls?: number;
  /** Timing options per engine; slow engines get at least `minSamples` samples whatever the budget. */
  readonly timing?: MeasureOptions;
  readonly engines?: readonly EngineName[];
  readonly log?: (line: string) => void;
}

export interface EngineTiming extends Timing {
  readonly engine: EngineName;
  readonly size: number;
  /** Time to load the scenario into the engine (ms). */
  readonly loadMs: number;
}

export interface SizeResult {
  readonly size: number;
  readonly calls: number;
  readonly rules: number;
  readonly agreement: Omit<Agreement, 'mismatches'> & { readonly mismatches: number };
  readonly timings: readonly EngineTiming[];
}

export class DisagreementError extends Error {
  override name = 'DisagreementError';
  readonly mismatches: readonly Mismatch[];
  constructor(size: number, mismatches: readonly Mismatch[]) {
    const shown = mismatches
      .slice(0, 5)
      .map(
        (m) =>
          `  ${m.engine} on ${JSON.stringify(m.call.name)} ${JSON.stringify(m.call.arguments)}: expected ${m.expected.effect} (${m.expected.because.join(', ')}), got ${m.got.effect} (${m.got.because.join(', ')})`,
      )
      .join('\n');
    super(`the engines disagree on ${mismatches.length} decisions at size ${size}; no time is reported:\n${shown}`);
    this.mismatches = mismatches;
  }
}

export function defaultCalls(size: number): number {
  return size >= 10_000 ? 512 : 1024;
}

/** Loads the scenario into the engines and checks agreement; throws DisagreementError on any mismatch. */
export async function loadAndAgree(
  scenario: Scenario,
  names: readonly EngineName[],
): Promise<{ engines: { engine: Engine; loadMs: number }[]; agreement: Agreement }> {
  const engines: { engine: Engine; loadMs: number }[] = [];
  for (const name of names) {
    const t0 = performance.now();
    const engine = await ENGINES[name](scenario);
    engines.push({ engine, loadMs: performance.now() - t0 });
  }
  const agreement = checkAgreement(
    scenario.calls,
    engines.map((e) => e.engine),
  );
  if (agreement.mismatches.length > 0) throw new DisagreementError(scenario.size, agreement.mismatches);
  return { engines, agreement };
}

/** The agreement part of a size, alone (the bench runs it in its own process before any timing). */
export async function agreeSize(size: number, options: SizeOptions = {}): Promise<Omit<SizeResult, 'timings'>> {
  const log = options.log ?? (() => {});
  const scenario = buildScenario(size, { calls: options.calls ?? defaultCalls(size) });
  const names = options.engines ?? (Object.keys(ENGINES) as EngineName[]);
  log(`size ${size}: loading ${names.join(', ')} and checking ${scenario.calls.length} calls through each`);
  const { agreement } = await loadAndAgree(scenario, names);
  log(
    `size ${size}: all ${names.length} engines agree on ${scenario.calls.length} calls (${agreement.decisions} decisions)`,
  );
  return {
    size,
    calls: scenario.calls.length,
    rules: scenario.rules.length,
    agreement: { decisions: agreement.decisions, mix: agreement.mix, mismatches: 0 },
  };
}

/**
 * Times one engine on a size's scenario with nothing else loaded (the bench runs it in its own process,
 * so no engine is timed beside another's heap). The scenario is deterministic: these are the calls the
 * agreement check saw.
 */
export async function timeEngine(size: number, name: EngineName, options: SizeOptions = {}): Promise<EngineTiming> {
  const log = options.log ?? (() => {});
  const scenario = buildScenario(size, { calls: options.calls ?? defaultCalls(size) });
  const t0 = performance.now();
  const engine = await ENGINES[name](scenario);
  const loadMs = performance.now() - t0;
  const timing = measure((from, count) => engine.run(scenario.calls, from, count), options.timing);
  log(
    `size ${size}: ${name.padEnd(8)} p50 ${formatNs(timing.p50)}  p99 ${formatNs(timing.p99)}  (${timing.samples} samples × ${timing.batch})`,
  );
  return { engine: name, size, loadMs, ...timing };
}

/** A size in one process: agreement, then every engine timed in turn (used by the tests; the bench splits it). */
export async function benchSize(size: number, options: SizeOptions = {}): Promise<SizeResult> {
  const log = options.log ?? (() => {});
  const scenario = buildScenario(size, { calls: options.calls ?? defaultCalls(size) });
  const names = options.engines ?? (Object.keys(ENGINES) as EngineName[]);
  log(`size ${size}: loading ${names.join(', ')} and checking ${scenario.calls.length} calls through each`);
  const { engines, agreement } = await loadAndAgree(scenario, names);
  log(
    `size ${size}: all ${names.length} engines agree on ${scenario.calls.length} calls (${agreement.decisions} decisions)`,
  );
  const timings: EngineTiming[] = [];
  for (const { engine, loadMs } of engines) {
    const timing = measure((from, count) => engine.run(scenario.calls, from, count), options.timing);
    timings.push({ engine: engine.name, size, loadMs, ...timing });
    log(
      `size ${size}: ${engine.name.padEnd(8)} p50 ${formatNs(timing.p50)}  p99 ${formatNs(timing.p99)}  (${timing.samples} samples × ${timing.batch})`,
    );
  }
  return {
    size,
    calls: scenario.calls.length,
    rules: scenario.rules.length,
    agreement: { decisions: agreement.decisions, mix: agreement.mix, mismatches: 0 },
    timings,
  };
}

export function formatNs(ns: number): string {
  if (!Number.isFinite(ns)) return String(ns);
  if (ns < 1_000) return `${ns.toFixed(0)} ns`;
  if (ns < 1_000_000) return `${(ns / 1_000).toFixed(ns < 10_000 ? 2 : 1)} µs`;
  return `${(ns / 1_000_000).toFixed(ns < 10_000_000 ? 2 : 1)} ms`;
}
