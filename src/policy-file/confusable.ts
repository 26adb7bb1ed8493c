/**
 * Confusable tool names for lint: names that read alike but compare differently (a Cyrillic "а" in
 * "reаd_file"), found with the UTS #39 skeletons of src/unicode/confusables.ts (the same check that
 * resolution runs), and names that mix scripts.
 */
import { canonical } from '../names.js';
import { findConfusables as lookalikePairs } from '../unicode/confusables.js';

const SCRIPTS = [
  ['Latin', /\p{Script=Latin}/u],
  ['Cyrillic', /\p{Script=Cyrillic}/u],
  ['Greek', /\p{Script=Greek}/u],
  ['Armenian', /\p{Script=Armenian}/u],
  ['Cherokee', /\p{Script=Cherokee}/u],
] as const;

/** The scripts of a name's letters (of the few that hold Latin lookalikes), in first-seen order. */
function scriptsOf(name: string): string[] {
  const found: string[] = [];
  for (const ch of name) {
    for (const [script, re] of SCRIPTS) if (re.test(ch) && !found.includes(script)) found.push(script);
  }
  return found;
}

/** A pair or a single name a reader may take for another. */
export type ConfusableFinding =
  | {
      readonly kind: 'mixed-script';
      readonly name: string;
      readonly scripts: readonly string[];
      readonly other?: never;
    }
  | { readonly kind: 'lookalike'; readonly name: string; readonly other: string; readonly scripts?: never };

/**
 * Confusable names among `names`: each name whose letters mix scripts, and each pair with different
 * canonical forms but one skeleton. Names with one canonical form are not confusable (they are one name).
 */
export function confusableFindings(names: Iterable<string>): ConfusableFinding[] {
  const findings: ConfusableFinding[] = [];
  const seen = new Set<string>();
  const unique: string[] = [];
  for (const name of names) {
    const form = canonical(name);
    if (seen.has(form)) continue;
    seen.add(form);
    unique.push(name);
    const scripts = scriptsOf(name);
    if (scripts.length > 1) findings.push({ kind: 'mixed-script', name, scripts });
  }
  for (const pair of lookalikePairs(unique)) findings.push({ kind: 'lookalike', name: pair.second, other: pair.first });
  return findings;
}
