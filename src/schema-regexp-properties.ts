/**
 * The code points of a Unicode property escape (`\p{L}`, `\p{Script=Greek}`…) as this ECMAScript engine reads it,
 * for the translation of a schema's `pattern` to RE2 (schema-regexp.ts): RE2's tables are another Unicode version's,
 * so a set is read from the engine's own RegExp. Read fast (a few ms), kept by a canonical name in a bounded cache
 * whose sets are shared by content: what one schema's properties cost never makes another's fail.
 */

/** A set of code points: sorted, disjoint, non-adjacent inclusive ranges [lo, hi, lo, hi, …]. */
export type Ranges = readonly number[];

/**
 * The code points of `\p{name}` (a name ECMAScript accepts, the pattern already compiled by `new RegExp(…, 'u')`),
 * from the process's cache of MAX_NAMES names.
 */
export function propertySet(name: string): Ranges {
  return processSets.get(name);
}

/**
 * More names than ECMAScript's properties have spellings once canonical (~900: 38 General_Category values with their
 * aliases, ~175 scripts by two names each as `sc=` and `scx=`, ~100 binary property names), so a name read stays
 * read: an upstream spelling every one costs each read once in the process (~5 ms each), never again.
 */
export const MAX_NAMES = 1_024;

/** Property sets by name: each canonical name read once while among the `capacity` last used. */
export interface PropertySets {
  get(name: string): Ranges;
  /** The names held. */
  readonly size: number;
}

/**
 * A cache of property sets: past `capacity` names the least recently used is dropped (read again if it comes
 * back), never refused; names of one content share one set, dropped with the last of them. `runs`: read as runs
 * (this engine has the `v` flag) or code point by code point (an engine without it; tests read both ways).
 */
export function propertySets(capacity: number, runs = V_FLAG): PropertySets {
  /** Canonical name → its set (insertion order: least recently used first). */
  const byName = new Map<string, Ranges>();
  /** Content → the one set of that content and how many names hold it. */
  const byContent = new Map<string, { readonly set: Ranges; names: number }>();
  const intern = (read: Ranges): Ranges => {
    const key = read.join(',');
    const held = byContent.get(key) ?? { set: read, names: 0 };
    held.names++;
    byContent.set(key, held);
    return held.set;
  };
  const release = (set: Ranges): void => {
    const key = set.join(',');
    const held = byContent.get(key)!;
    if (--held.names === 0) byContent.delete(key);
  };
  return {
    get(name: string): Ranges {
      const key = canonicalName(name);
      let set = byName.get(key);
      if (set !== undefined) {
        byName.delete(key); // most recently used last
        byName.set(key, set);
        return set;
      }
      set = intern(runs ? readByRuns(name) : readByCodePoint(name));
      byName.set(key, set);
      if (byName.size > capacity) {
        const [oldest, dropped] = byName.entries().next().value!;
        byName.delete(oldest);
        release(dropped);
      }
      return set;
    },
    get size(): number {
      return byName.size;
    },
  };
}

/**
 * The name without the spelling of its property (ECMAScript's fixed table: `General_Category`/`gc`, `Script`/`sc`,
 * `Script_Extensions`/`scx`): `gc=L` and `General_Category=L` are `L` (a lone name that is a General_Category value
 * means that value). Value aliases (`Latin`/`Latn`) stay distinct names, their sets one by content.
 */
function canonicalName(name: string): string {
  const equals = name.indexOf('=');
  if (equals < 0) return name;
  const property = name.slice(0, equals);
  const value = name.slice(equals + 1);
  if (property === 'gc' || property === 'General_Category') return value;
  return `${property === 'Script' ? 'sc' : property === 'Script_Extensions' ? 'scx' : property}=${value}`;
}

/** Whether this engine has the `v` flag (class set operations): Node 20, every current browser. */
const V_FLAG = ((): boolean => {
  try {
    new RegExp('[\\p{L}&&\\p{Lu}]', 'v');
    return true;
  } catch {
    return false;
  }
})();

const processSets = propertySets(MAX_NAMES);

/**
 * The code points in blocks whose text is read alone: the BMP's (lone surrogates apart: high ones, then low ones,
 * so no two pair up), then the astral planes in four. A class intersected with one block has that block's ranges
 * only, which V8 scans ~10 times as fast as a class of ranges in several (`\p{Script=Latin}` over the astral planes:
 * 17 ms whole, 1.2 ms its astral part alone); fewer blocks, fewer RegExps to compile (these: ~5 ms a property
 * against ~9 with a block a plane).
 */
const BLOCKS: readonly (readonly [number, number])[] = [
  [0, 0xd7ff],
  [0xd800, 0xdbff],
  [0xdc00, 0xdfff],
  [0xe000, 0xffff],
  [0x10000, 0x1ffff], // scripts, symbols, emoji
  [0x20000, 0x3ffff], // CJK ideographs
  [0x40000, 0xdffff], // unassigned so far
  [0xe0000, 0x10ffff], // tags, variation selectors, private use
];

/** Each block's code points in order, as one string; held weakly (4.4 MB, ~30 ms to build again). */
let blockTexts: WeakRef<string[]> | undefined;

function texts(): string[] {
  let out = blockTexts?.deref();
  if (out !== undefined) return out;
  const utf16 = new TextDecoder('utf-16le', { ignoreBOM: true });
  out = BLOCKS.map(([from, to]) => {
    // A lone surrogate would be decoded as U+FFFD: those blocks (2,048 code points) a code unit at a time.
    if (from >= 0xd800 && to <= 0xdfff)
      return String.fromCharCode(...Array.from({ length: to - from + 1 }, (_, i) => from + i));
    const units = new Uint16Array((to - from + 1) * (from >= 0x10000 ? 2 : 1));
    for (let c = from, i = 0; c <= to; c++)
      if (c < 0x10000) units[i++] = c;
      else {
        units[i++] = 0xd800 + ((c - 0x10000) >> 10);
        units[i++] = 0xdc00 + ((c - 0x10000) & 0x3ff);
      }
    return utf16.decode(units);
  });
  blockTexts = new WeakRef(out);
  return out;
}

const hex = (c: number): string => `\\u{${c.toString(16)}}`;

/**
 * The set read as runs: in each block's text, V8 finds the next member (`[\p{X}&&[block]]`), then the next
 * non-member (`[[block]--\p{X}]`); ~2 searches a range instead of a test a code point (Letter: 7 against 85 ms).
 */
function readByRuns(name: string): Ranges {
  const out: number[] = [];
  const all = texts();
  for (const [k, [from, to]] of BLOCKS.entries()) {
    const text = all[k]!;
    const width = from >= 0x10000 ? 2 : 1;
    const block = `[${hex(from)}-${hex(to)}]`;
    const inside = new RegExp(`[\\p{${name}}&&${block}]`, 'gv');
    const outside = new RegExp(`[${block}--\\p{${name}}]`, 'gv');
    for (let at = 0; ;) {
      inside.lastIndex = at;
      if (inside.exec(text) === null) break;
      const lo = from + (inside.lastIndex - width) / width;
      outside.lastIndex = inside.lastIndex;
      at = outside.exec(text) === null ? text.length : outside.lastIndex - width;
      add(out, lo, from + at / width - 1);
    }
  }
  return out;
}

/** Each code point tested by its own RegExp (an engine without the `v` flag): ~60 ms. */
function readByCodePoint(name: string): Ranges {
  const re = new RegExp(`^\\p{${name}}$`, 'u');
  const out: number[] = [];
  for (let c = 0; c <= 0x10ffff; c++) if (re.test(String.fromCodePoint(c))) add(out, c, c);
  return out;
}

function add(out: number[], lo: number, hi: number): void {
  if (out.length > 0 && out[out.length - 1] === lo - 1) out[out.length - 1] = hi;
  else out.push(lo, hi);
}
