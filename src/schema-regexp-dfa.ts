/**
 * What RE2's DFA caches may hold, together, for the process. re2js builds each compiled expression's DFA lazily,
 * state by state as texts meet it, up to 8 MB (its own count) and keeps it with the expression: Ajv keeps every
 * compiled pattern, so 50 small patterns and one call of 1 MB of arguments kept ~180 MB, and ~1,100 patterns hit once
 * each a 4 GB heap. re2js has no option for that budget, and none for a budget across expressions. So each test
 * charges what its DFA grew (or shrank) to one ledger; past MAX_DFA_BYTES, the DFAs grown least recently are emptied
 * (re2js' own `clearCache`: the states are built again when needed; the answers never change). A DFA emptied a
 * second time is thrashing (the DFAs the calls need do not fit together, and least-recently-grown misses on every
 * turn of a cycle: each call built them all again, ~2 s of CPU a call for 50 patterns and 1 MB of arguments): it is
 * left to re2js' NFA (its `failed`, as re2js marks a DFA it cannot use), as RE2 falls back to the NFA when its DFA
 * cache keeps filling. The NFA is linear too, and slower only on long texts (~4× on 1 MB). Not for good: after
 * {@link REST} tests on the NFA the DFA is tried again (a flood of other patterns that pushed it out may be over),
 * and a DFA that thrashes again rests twice as long, up to {@link LONGEST_REST}: at worst one rebuild per rest.
 * re2js empties a DFA itself when its states pass its 8 MB: that counts as the ledger's emptying.
 */
import type { RE2JS } from 're2js';

/**
 * The most the DFAs may hold together, by re2js' count (within a few % of the heap it takes): 4 of re2js' per-DFA
 * budgets. A short text against a pattern already used builds no state and is never charged.
 */
export const MAX_DFA_BYTES = 32 * 2 ** 20;

/** The tests a DFA left to the NFA waits before it is tried again (doubled each time it thrashes again). */
export const REST = 4096;
/** The longest rest: 64 times the first (262,144 tests). */
const LONGEST_REST = REST * 64;

/**
 * The most rune classes (table entries a state, 8 bytes each by re2js' count) a DFA may have: 2,048, or 128 for
 * each instruction of its program. re2js gives each state it steps from a table of one entry per class, and a class
 * is one instruction however many ranges it holds: one class of 100,000 code points (19 instructions, 200,007
 * classes) made each table 1.6 MB, five filled the DFA's 8 MB, and each test of 60 characters filled it twice before
 * re2js bailed to its NFA (~10.7 ms a test; 5.8 s one test of 100,000 characters, where MAX_WORK states ~0.2 s).
 * A DFA with more classes is left to the NFA for good, as re2js leaves one it cannot use (`failed`), never charged
 * nor tried again. `^\p{L}+(?: \p{L}+)*$`: 1,371 classes, 14 instructions (kept).
 */
const MAX_CLASSES = 2048;
const MAX_CLASSES_PER_INSTRUCTION = 128;
/**
 * The most table entries a test's text may make a kept DFA fill: its length × its classes (+1). re2js empties and
 * rebuilds its DFA as long as it reaches new states no faster than one every 10 characters: a text may fill up to
 * its length ÷ 10 tables. A longer text is tested by the NFA (the DFA set aside for that test only).
 */
const MAX_TABLE_ENTRIES = 2 ** 27;
/** Texts this short never pass MAX_TABLE_ENTRIES with MAX_CLASSES_PER_INSTRUCTION × MAX_PROGRAM classes or fewer. */
const SHORT_TEXT = 128;

/** What the ledger counts for each DFA it holds, above its states (the entry itself; a DFA collected before it is dropped). */
const ENTRY_BYTES = 512;

type Dfa = ReturnType<RE2JS['re2']>['lazyDFA'];

/** A DFA charged to the ledger: held weakly (a pattern dropped with its schema takes its DFA with it). */
interface Charge {
  readonly dfa: WeakRef<Dfa>;
  /** Its bytes by re2js' count when last charged (0: not in the ledger). */
  used: number;
  /** Whether the ledger has emptied it before (since it was last tried again). */
  emptied: boolean;
  /** Tests left on the NFA before the DFA is tried again (0: not left to the NFA by the ledger). */
  resting: number;
  /** The rest after its next thrash. */
  nextRest: number;
}

/** Insertion order: the least recently grown first. */
const ledger = new Set<Charge>();
let total = 0;

/**
 * `re.testExact`, charging what it grew `re`'s DFA to the ledger. re2js 2.10.0's RE2 keeps its DFA in `lazyDFA`
 * (null until a test needs it), which counts its bytes as `stateBudget - memBudget`.
 */
export function boundedTest(re: RE2JS): (text: string) => boolean {
  const inner = re.re2();
  if (!('lazyDFA' in inner)) throw new Error('re2js without the DFA this version of toolgate bounds');
  let charge: Charge | undefined;
  const mostClasses = Math.max(MAX_CLASSES, MAX_CLASSES_PER_INSTRUCTION * re.programSize());
  let checked = false;
  /** How many times re2js emptied the DFA itself (its 8 MB full) in the test being made. */
  let selfEmptied = 0;
  /** `re.testExact(text)`, by the NFA when the DFA's tables could cost more than its program would. */
  const testExact = (text: string): boolean => {
    if (!checked) {
      const dfa = inner.dfa; // built here (its classes counted), as the test would
      if (dfa.numClasses + 1 > mostClasses) dfa.failed = true; // for good: its NFA answers
      // re2js empties its DFA itself when its states pass its 8 MB (clearCache, in resetCache and start): counted.
      const clearCache = dfa.clearCache;
      dfa.clearCache = (): void => {
        selfEmptied++;
        clearCache.call(dfa);
      };
      checked = true;
    }
    if (text.length <= SHORT_TEXT) return re.testExact(text);
    const dfa = inner.dfa;
    if (dfa.failed || text.length * (dfa.numClasses + 1) <= MAX_TABLE_ENTRIES) return re.testExact(text);
    dfa.failed = true; // for this text
    try {
      return re.testExact(text);
    } finally {
      dfa.failed = false;
    }
  };
  return (text: string): boolean => {
    selfEmptied = 0;
    const matched = testExact(text);
    const dfa = inner.lazyDFA as Dfa | null;
    if (dfa === null) return matched;
    if (charge !== undefined && charge.resting > 0) {
      if (--charge.resting === 0) {
        dfa.failed = false; // tried again: emptied, its states built as texts need them
        charge.emptied = false;
      }
      return matched;
    }
    charge ??= { dfa: new WeakRef(dfa), used: 0, emptied: false, resting: 0, nextRest: REST };
    // Emptied by re2js itself (its states for the texts do not fit its 8 MB): thrashing as when the ledger empties it.
    if (selfEmptied > 0) emptied(charge, dfa);
    const used = dfa.stateBudget - dfa.memBudget;
    if (used !== charge.used) account(charge, used);
    return matched;
  };
}

function account(charge: Charge, used: number): void {
  if (charge.used > 0) {
    ledger.delete(charge);
    total -= charge.used + ENTRY_BYTES;
  }
  charge.used = used;
  if (used === 0) return;
  ledger.add(charge);
  total += used + ENTRY_BYTES;
  for (const oldest of ledger) {
    if (total <= MAX_DFA_BYTES || oldest === charge) break;
    const dfa = oldest.dfa.deref();
    dfa?.clearCache();
    if (dfa !== undefined) emptied(oldest, dfa);
    oldest.emptied = true;
    ledger.delete(oldest);
    total -= oldest.used + ENTRY_BYTES;
    oldest.used = 0;
  }
}

/**
 * `charge`'s DFA was emptied (by the ledger or by re2js): a second time since it was last tried, it is left to the
 * NFA (emptied, its rest set, the next doubled).
 */
function emptied(charge: Charge, dfa: Dfa): void {
  if (charge.emptied && !dfa.failed) {
    dfa.failed = true;
    dfa.clearCache();
    charge.resting = charge.nextRest;
    charge.nextRest = Math.min(2 * charge.nextRest, LONGEST_REST);
  }
  charge.emptied = true;
}

/** What the ledger counts now (tests). */
export function dfaBytes(): number {
  return total;
}
