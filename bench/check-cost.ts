/**
 * What one passing JSON Schema check costs, the README's schema (bench/engines/toolgate.ts ARGUMENTS_SCHEMA) on 1,024
 * JSON-parsed arguments: the validator `compileValidator` gives (what `invoke` calls), and Ajv's compiled check alone
 * (its code with the bounds' counts, no start or end of the check), and the loop around them. The least ns a check
 * of 9 rounds of 2,000,000.
 * `npx tsx bench/check-cost.ts [tree]`: `tree` another checkout's root (e.g. a worktree of an older commit), whose
 * src/ is measured instead; run each in turn, alternated, on a quiet machine (docs/benchmarks.md, 2026-12-07).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ARGUMENTS_SCHEMA } from './engines/toolgate.js';

type Check = (value: unknown, context?: object) => unknown;
interface Schema {
  compileValidator(schema: unknown): (value: Record<string, unknown>) => unknown;
}
interface Dialects {
  ajvFor(schema: unknown): { compile(schema: unknown): Check };
}
interface Bounds {
  newCheck(root: unknown): void;
}

const tree = process.argv[2] === undefined ? resolve(import.meta.dirname, '..') : resolve(process.argv[2]);
const from = (file: string): string => pathToFileURL(resolve(tree, 'src', file)).href;
const { compileValidator } = (await import(from('schema.js'))) as Schema;
const { ajvFor } = (await import(from('schema-dialects.js'))) as Dialects;
const { newCheck } = (await import(from('schema-bounds.js'))) as Bounds;

const validator = compileValidator(ARGUMENTS_SCHEMA) as (value: unknown) => { ok: boolean };
const check = ajvFor(ARGUMENTS_SCHEMA).compile(ARGUMENTS_SCHEMA);
const modes = ['read', 'write', 'admin'];
const values = Array.from(
  { length: 1024 },
  (_, i) => JSON.parse(`{"amount":${i},"mode":"${modes[i % 3]}"}`) as Record<string, unknown>,
);
const CONTEXT = Object.freeze({});
const N = 2_000_000;
const least: Record<string, number> = {};

/** `passes` on N values; `restart` before each 1,024 (the check alone: its count of work started again, below its bound). */
function time(name: string, passes: (value: unknown) => boolean, restart?: () => void): void {
  let passed = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    if (restart !== undefined && (i & 1023) === 0) restart();
    if (passes(values[i & 1023])) passed++;
  }
  const ns = Number(process.hrtime.bigint() - start) / N;
  if (passed !== N) throw new Error(`${name}: ${N - passed} checks failed`);
  least[name] = Math.min(least[name] ?? Infinity, ns);
}

for (let round = 0; round < 9; round++) {
  // The validator starts each check (its steps counted from zero); Ajv's check alone is started again each 1,024.
  time('validator', (value) => validator(value).ok);
  time(
    'check alone',
    (value) => check(value, CONTEXT) === true,
    () => newCheck(undefined),
  );
  time('the loop alone', (value) => value !== undefined);
}
console.log(
  `${tree}: ${Object.entries(least)
    .map(([name, ns]) => `${name} ${ns.toFixed(2)} ns`)
    .join(', ')}`,
);
