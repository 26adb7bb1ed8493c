/**
 * The agreement check: every call of the scenario through every engine, before any is timed. The
 * first engine is the reference; an engine that decides differently, or (for first-match engines) names
 * a different deciding rule or layer, or (for Cedar) does not count it among its determining policies,
 * is a mismatch, and a mismatch fails the bench.
 */
import type { Engine, EngineName, Verdict } from './engines/engine.js';
import type { Because, BenchCall } from './scenario.js';

export interface Mismatch {
  readonly call: BenchCall;
  readonly engine: EngineName;
  readonly expected: Verdict;
  readonly got: Verdict;
}

/** How the calls of the mix were decided (by the reference engine): the mix must reach every layer and both rule outcomes. */
export interface DecisionMix {
  readonly allow: number;
  readonly deny: number;
  readonly notDeclared: number;
  readonly tenant: number;
  readonly caller: number;
  readonly ruleAllow: number;
  readonly ruleDeny: number;
  readonly fallback: number;
}

export interface Agreement {
  readonly decisions: number;
  readonly mix: DecisionMix;
  readonly mismatches: readonly Mismatch[];
}

function agrees(engine: Engine, expected: Verdict, got: Verdict): boolean {
  if (got.effect !== expected.effect) return false;
  const because: Because = expected.because[0]!;
  if (engine.explains === 'first-match') return got.because.length === 1 && got.because[0] === because;
  // Cedar reports every policy that determined the answer: the deciding one must be among them, and its
  // default deny (no rule matched) reports none.
  return because === 'fallback' ? got.because.length === 0 : got.because.includes(because);
}

export function checkAgreement(calls: readonly BenchCall[], engines: readonly Engine[]): Agreement {
  const [reference, ...others] = engines;
  if (!reference || reference.explains !== 'first-match')
    throw new TypeError('checkAgreement: the first engine must be a first-match engine');
  const mismatches: Mismatch[] = [];
  const mix = { allow: 0, deny: 0, notDeclared: 0, tenant: 0, caller: 0, ruleAllow: 0, ruleDeny: 0, fallback: 0 };
  for (const call of calls) {
    const expected = reference.explain(call);
    const because = expected.because[0];
    if (expected.because.length !== 1 || because === undefined)
      throw new Error(`${reference.name} gave ${expected.because.length} reasons for ${call.name}`);
    mix[expected.effect]++;
    if (because === 'layer:not_declared') mix.notDeclared++;
    else if (because === 'layer:tenant') mix.tenant++;
    else if (because === 'layer:caller') mix.caller++;
    else if (because === 'fallback') mix.fallback++;
    else if (expected.effect === 'allow') mix.ruleAllow++;
    else mix.ruleDeny++;
    for (const engine of others) {
      let got: Verdict;
      try {
        got = engine.explain(call);
      } catch (error) {
        got = { effect: 'deny', because: [`rule:(threw: ${(error as Error).message})`] };
      }
      if (!agrees(engine, expected, got)) mismatches.push({ call, engine: engine.name, expected, got });
    }
  }
  return { decisions: calls.length * engines.length, mix, mismatches };
}
