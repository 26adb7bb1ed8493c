/**
 * Run sizes for the reliability suite. `npm test` runs the CI size; `npm run test:deep` sets
 * TOOLGATE_DEEP=1 and runs the same tests at the deep size. TOOLGATE_SEED fixes the seed of the
 * generated inputs (fast-check's and the oracle's) to replay a failure.
 */
export const DEEP = process.env['TOOLGATE_DEEP'] === '1';

/** The CI size or the deep size of a run count. */
export function size(ci: number, deep: number): number {
  return DEEP ? deep : ci;
}

const seedText = process.env['TOOLGATE_SEED'];
/** The seed of this run: TOOLGATE_SEED when set, else a fresh one (printed by failing properties). */
export const SEED =
  seedText !== undefined && seedText !== '' ? Number(seedText) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;

/** fast-check parameters at this run's size. */
export function fcParams(ci: number, deep: number): { numRuns: number; seed: number } {
  return { numRuns: size(ci, deep), seed: SEED };
}

/** The bench's deterministic PRNG (mulberry32), for generators that need millions of draws quickly. */
export { prng } from '../../bench/scenario.js';
