/**
 * Per-decision latency without timer overhead dominating: the clock is read around a batch of decisions
 * (sized so one batch takes about `sampleNs`), many batches make the samples, and a sample is the batch's
 * time divided by its size. p50/p99 are over samples: for fast engines a sample is the mean of a batch,
 * so p99 is the 99th percentile of batch means (a slow batch, not a slow single call); an engine slow
 * enough for batches of one gets true per-call percentiles. Warm-up runs first; every result is summed
 * into a sink that is reported, so the work cannot be optimised away.
 */

export interface Timing {
  /** Nanoseconds per decision. */
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
  readonly min: number;
  readonly max: number;
  readonly samples: number;
  /** Decisions per sample. */
  readonly batch: number;
}

export interface MeasureOptions {
  /** Target time of one sample. @default 200_000 (0.2 ms) */
  readonly sampleNs?: number;
  /** Stop sampling after this long (once `minSamples` are in). @default 1500 */
  readonly budgetMs?: number;
  /** @default 30 */
  readonly minSamples?: number;
  /** @default 2000 */
  readonly maxSamples?: number;
  /** Warm-up time. @default 300 */
  readonly warmupMs?: number;
  /**
   * Called before each batch, outside its time, with the batch's `from` and `count` (measureAsync): builds the
   * batch's input as a host holds it when it calls (e.g. argument texts a model's response gave), so the time is
   * the call's, not the input's making.
   */
  readonly prepare?: (from: number, count: number) => void;
}

let sink = 0;
/** The sum of every batch's result so far (printed, so no batch is dead code). */
export function sinkValue(): number {
  return sink;
}

function now(): bigint {
  return process.hrtime.bigint();
}

export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

export function summarise(perDecision: number[], batch: number): Timing {
  const sorted = [...perDecision].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  return {
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    mean,
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    samples: sorted.length,
    batch,
  };
}

/** Times a synchronous batch function: `run(from, count)` decides `count` decisions starting at index `from`. */
export function measure(run: (from: number, count: number) => number, options: MeasureOptions = {}): Timing {
  const sampleNs = options.sampleNs ?? 200_000;
  const budgetNs = BigInt(Math.round((options.budgetMs ?? 1500) * 1e6));
  const minSamples = options.minSamples ?? 30;
  const maxSamples = options.maxSamples ?? 2000;
  let from = 0;
  // Warm up, sizing the batch so that one takes about a sample's time.
  let batch = 1;
  const warmEnd = now() + BigInt(Math.round((options.warmupMs ?? 300) * 1e6));
  do {
    const t0 = now();
    sink += run(from, batch);
    const took = Number(now() - t0);
    from += batch;
    if (took < sampleNs / 2 && batch < 1 << 20) batch *= 2;
    else if (took > sampleNs * 2 && batch > 1) batch = Math.ceil(batch / 2);
  } while (now() < warmEnd);
  const samples: number[] = [];
  const start = now();
  while (samples.length < maxSamples && (samples.length < minSamples || now() - start < budgetNs)) {
    const t0 = now();
    sink += run(from, batch);
    const t1 = now();
    samples.push(Number(t1 - t0) / batch);
    from += batch;
  }
  return summarise(samples, batch);
}

/** Times an asynchronous batch function the same way. */
export async function measureAsync(
  run: (from: number, count: number) => Promise<number>,
  options: MeasureOptions = {},
): Promise<Timing> {
  const sampleNs = options.sampleNs ?? 200_000;
  const budgetNs = BigInt(Math.round((options.budgetMs ?? 1500) * 1e6));
  const minSamples = options.minSamples ?? 30;
  const maxSamples = options.maxSamples ?? 2000;
  let from = 0;
  let batch = 1;
  const warmEnd = now() + BigInt(Math.round((options.warmupMs ?? 300) * 1e6));
  do {
    options.prepare?.(from, batch);
    const t0 = now();
    sink += await run(from, batch);
    const took = Number(now() - t0);
    from += batch;
    if (took < sampleNs / 2 && batch < 1 << 20) batch *= 2;
    else if (took > sampleNs * 2 && batch > 1) batch = Math.ceil(batch / 2);
  } while (now() < warmEnd);
  const samples: number[] = [];
  const start = now();
  while (samples.length < maxSamples && (samples.length < minSamples || now() - start < budgetNs)) {
    options.prepare?.(from, batch);
    const t0 = now();
    sink += await run(from, batch);
    const t1 = now();
    samples.push(Number(t1 - t0) / batch);
    from += batch;
  }
  return summarise(samples, batch);
}
