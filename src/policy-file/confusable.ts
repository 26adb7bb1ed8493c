/**
 * Confusable tool names: names that read alike but compare differently (a Cyrillic "а" in "reаd_file"),
 * and names that mix scripts. A deliberately small check — a skeleton over the Latin, Cyrillic and Greek
 * lookalikes that matter most for identifiers — kept behind {@link findConfusables} alone, so that a full
 * Unicode confusables table (UTS #39) can replace it without touching lint.
 */
import { canonical } from '../names.js';

// Letters and digits that render like a Latin letter in common fonts (after case folding).
const LOOKALIKE: Readonly<Record<string, string>> = {
  // Cyrillic
  'а': 'a', 'в': 'b', 'с': 'c', 'ԁ': 'd', 'е': 'e', 'һ': 'h', 'і': 'i', 'ј': 'j', 'к': 'k', 'ӏ': 'l', 'м': 'm', 'н': 'h',
  'о': 'o', 'р': 'p', 'ԛ': 'q', 'ѕ': 's', 'т': 't', 'ц': 'u', 'ѵ': 'v', 'ԝ': 'w', 'х': 'x', 'у': 'y', 'ү': 'y', 'ѳ': 'o', 'ь': 'b',
  // Greek
  'α': 'a', 'β': 'b', 'ϲ': 'c', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x', 'γ': 'y', 'ω': 'w',
  // Latin and digits that pass for other letters
  'ı': 'i', 'ɡ': 'g', 'ℓ': 'l', '0': 'o', '1': 'l', '|': 'l',
};

/** The form two names share when they look alike: the canonical form with lookalikes mapped to Latin, and `rn` read as `m`. */
export function skeleton(name: string): string {
  let out = '';
  for (const ch of canonical(name)) out += LOOKALIKE[ch] ?? ch;
  return out.replace(/rn/g, 'm');
}

const SCRIPTS = [
  ['Latin', /\p{Script=Latin}/u],
  ['Cyrillic', /\p{Script=Cyrillic}/u],
  ['Greek', /\p{Script=Greek}/u],
  ['Armenian', /\p{Script=Armenian}/u],
  ['Cherokee', /\p{Script=Cherokee}/u],
] as const;

/** The scripts of a name's letters (of the few that hold Latin lookalikes), in first-seen order. */
export function scriptsOf(name: string): string[] {
  const found: string[] = [];
  for (const ch of name) {
    for (const [script, re] of SCRIPTS) if (re.test(ch) && !found.includes(script)) found.push(script);
  }
  return found;
}

/** A pair or a single name a reader may take for another. */
export type ConfusableFinding =
  | { readonly kind: 'mixed-script'; readonly name: string; readonly scripts: readonly string[]; readonly other?: never }
  | { readonly kind: 'lookalike'; readonly name: string; readonly other: string; readonly scripts?: never };

/**
 * Confusable names among `names`: each name whose letters mix scripts, and each pair with different
 * canonical forms but one skeleton. Names with one canonical form are not confusable (they are one name).
 */
export function findConfusables(names: Iterable<string>): ConfusableFinding[] {
  const findings: ConfusableFinding[] = [];
  const bySkeleton = new Map<string, string>();
  const seen = new Set<string>();
  for (const name of names) {
    const form = canonical(name);
    if (seen.has(form)) continue;
    seen.add(form);
    const scripts = scriptsOf(name);
    if (scripts.length > 1) findings.push({ kind: 'mixed-script', name, scripts });
    const key = skeleton(name);
    const other = bySkeleton.get(key);
    if (other !== undefined) findings.push({ kind: 'lookalike', name, other });
    else bySkeleton.set(key, name);
  }
  return findings;
}
