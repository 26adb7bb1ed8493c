/**
 * Confusable tool names (Unicode Technical Standard #39, "Unicode Security Mechanisms", section 4).
 *
 * Two names with different canonical forms are two permissions; when they also look alike ("search"
 * with a Latin `a` and "seаrch" with a Cyrillic `а`), a person reviewing a policy reads one as the
 * other. toolgate reports such pairs when an allowlist is resolved and when a tool is registered —
 * configuration time, never per call: `decide`/`check` do not pay for it.
 *
 * The data is confusables.txt's prototype mapping (see scripts/gen-confusables.ts for the source and
 * version); the skeleton is computed as UTS #39 defines it.
 */
import { ConfigurationError } from '../errors.js';
import { canonical, describe } from '../names.js';
import { CONFUSABLES, CONFUSABLES_VERSION } from './confusables-data.js';
import { decodeCodePointTable } from './code-point-table.js';

/** The Unicode version of the confusables data in use. */
export { CONFUSABLES_VERSION };

/**
 * What to do about two declared names that look alike: `'error'` throws a ConfigurationError,
 * `'warn'` emits one process warning per pair (code `TOOLGATE_CONFUSABLE_NAMES`), `'off'` does nothing.
 */
export type ConfusablesMode = 'error' | 'warn' | 'off';

/** Two names whose canonical forms differ but which look alike. */
export interface ConfusablePair {
  /** The name seen first, in its given spelling. */
  readonly first: string;
  /** The name that looks like it, in its given spelling. */
  readonly second: string;
  /** The UTS #39 skeleton they share. */
  readonly skeleton: string;
}

let prototypes: Map<number, string> | undefined;

function prototypeTable(): Map<number, string> {
  return (prototypes ??= decodeCodePointTable(CONFUSABLES));
}

const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;
const CACHEABLE_LENGTH = 256;
// Two generations, as in names.ts: evicting one entry at a time from a Map (`keys().next()`) walks the
// holes earlier deletions left, which made checking 100,000 names quadratic (issue 12).
const GENERATION = 2048;
let skeletons = new Map<string, string>();
let olderSkeletons = new Map<string, string>();

/**
 * The UTS #39 skeleton of `text`: NFD, Default_Ignorable_Code_Point characters removed, each character
 * replaced by its confusables.txt prototype, NFD again. Two strings are confusable when their skeletons
 * are equal. A skeleton is for comparison only, not for display (`m` becomes `rn`).
 *
 * @example
 * skeleton('search') === skeleton('seаrch') // true: the second has a Cyrillic а
 * skeleton('paypal') === skeleton('paypa1') // true: 1 and l are confusable
 */
export function skeleton(text: string): string {
  if (typeof text !== 'string') throw new TypeError(`skeleton() expects a string, got ${describe(text)}`);
  const hit = skeletons.get(text) ?? olderSkeletons.get(text);
  if (hit !== undefined) return hit;
  const table = prototypeTable();
  let out = '';
  for (const char of text.normalize('NFD').replace(IGNORABLE, '')) out += table.get(char.codePointAt(0)!) ?? char;
  const result = out.normalize('NFD');
  if (text.length <= CACHEABLE_LENGTH) {
    if (skeletons.size >= GENERATION) {
      olderSkeletons = skeletons;
      skeletons = new Map();
    }
    skeletons.set(text, result);
  }
  return result;
}

/**
 * @internal Look-alike names found as names are added one at a time: a registry checks each tool it
 * registers against the ones before it in time proportional to the name, not to the registry.
 */
export class ConfusableIndex {
  /** skeleton → the first name added with it, and that name's canonical form */
  readonly #bySkeleton = new Map<string, { readonly name: string; readonly form: string }>();

  /** The pairs `name` makes with the names added so far (it is not added). */
  pairsWith(name: string): ConfusablePair[] {
    const form = canonical(name);
    const pairs: ConfusablePair[] = [];
    for (const key of skeletonKeys(name, form)) {
      const seen = this.#bySkeleton.get(key);
      if (seen !== undefined && seen.form !== form && !pairs.some((p) => p.first === seen.name))
        pairs.push({ first: seen.name, second: name, skeleton: key });
    }
    return pairs;
  }

  add(name: string): void {
    const form = canonical(name);
    for (const key of skeletonKeys(name, form))
      if (!this.#bySkeleton.has(key)) this.#bySkeleton.set(key, { name, form });
  }
}

// The skeletons of the name as written and of its canonical form (so that Cyrillic "А" is caught against "a").
function skeletonKeys(name: string, form: string): string[] {
  return name === form ? [skeleton(name)] : [skeleton(name), skeleton(form)];
}

/**
 * The pairs of `names` that look alike but are different permissions: their canonical forms differ,
 * and their skeletons are equal — the skeletons of the names as written, or of their canonical forms
 * (so that Cyrillic "А" is caught against "a", since "A" and "a" are one permission). Names with one
 * canonical form are not reported here (resolution refuses those as collisions). Each pair is reported
 * once, with the first-seen name first.
 *
 * @example
 * findConfusables(['search', 'seаrch', 'fetch']) // [{ first: 'search', second: 'seаrch', skeleton: 'search' }]
 */
export function findConfusables(names: Iterable<string>): ConfusablePair[] {
  const index = new ConfusableIndex();
  const pairs: ConfusablePair[] = [];
  const reported = new Set<string>();
  for (const name of names) {
    for (const pair of index.pairsWith(name)) {
      const id = `${canonical(pair.first)}\u0000${canonical(name)}`;
      if (!reported.has(id)) {
        reported.add(id);
        pairs.push(pair);
      }
    }
    index.add(name);
  }
  return pairs;
}

/** Checks an option value; a TypeError names the option. */
export function confusablesMode(value: unknown, option = 'confusables'): ConfusablesMode {
  if (value === undefined) return 'warn';
  if (value === 'error' || value === 'warn' || value === 'off') return value;
  throw new TypeError(`option "${option}" must be 'error', 'warn' or 'off', got ${describe(value)}`);
}

const WARNED_LIMIT = 1024;
const warned = new Set<string>();

/** The message for one pair. */
function confusableText(pair: ConfusablePair, where: string): string {
  return (
    `${where}: tool names ${JSON.stringify(pair.first)} and ${JSON.stringify(pair.second)} look alike ` +
    `(Unicode confusables, skeleton ${JSON.stringify(pair.skeleton)}) but are different permissions; rename one of them`
  );
}

/**
 * Reports confusable pairs among declared names as `mode` says: throws a ConfigurationError quoting the
 * first pair, or emits a process warning once per pair (per process), or nothing.
 */
export function reportConfusables(pairs: readonly ConfusablePair[], mode: ConfusablesMode, where: string): void {
  if (mode === 'off' || pairs.length === 0) return;
  if (mode === 'error') {
    const more =
      pairs.length > 1 ? ` (and ${pairs.length - 1} more confusable pair${pairs.length > 2 ? 's' : ''})` : '';
    throw new ConfigurationError(`${confusableText(pairs[0]!, where)}${more}`);
  }
  for (const pair of pairs) {
    const id = `${where}\u0000${pair.first}\u0000${pair.second}`;
    if (warned.has(id)) continue;
    if (warned.size >= WARNED_LIMIT) warned.clear();
    warned.add(id);
    process.emitWarning(confusableText(pair, where), { type: 'ToolgateWarning', code: 'TOOLGATE_CONFUSABLE_NAMES' });
  }
}
