/**
 * The automata behind strings.ts's product search, one per component: glob.ts's own compiled glob run one
 * character at a time (with the trailing-slash rule), a prefix, the "clean path" automaton (a path that
 * `resolvePath` gives back unchanged) and the trie of excluded strings. Each reads a code point and the
 * current segment's class (the tracker, shared with the search) and answers one bit at the end of the input.
 */
import { inClass, type GlobSegment, type GlobStructure, type GlobToken } from '../glob.js';

/** A component: something that reads the string and answers a bit at its end. */
export type Component =
  | { readonly kind: 'glob'; readonly glob: GlobStructure; readonly part: 'match' | 'folder'; readonly fold: boolean }
  | { readonly kind: 'prefix'; readonly text: string }
  | { readonly kind: 'clean'; readonly absolute: boolean };

// ---- the segment tracker: what the current segment holds so far ----

export const EMPTY = 0;
const DOT = 1;
const DOTDOT = 2;
const OTHER = 3;

export function track(cls: number, cp: number): number {
  if (cp !== 0x2e) return OTHER;
  return cls === EMPTY ? DOT : cls === DOT ? DOTDOT : OTHER;
}

// ---- glob components: glob.ts's automaton, one character at a time ----

interface Element {
  readonly alt: number;
  readonly seg: number;
  /** literal: characters matched; wild: token state; any: 0 */
  readonly pos: number;
}

class GlobMachine {
  readonly #alts: readonly (readonly GlobSegment[])[];
  readonly #alts32: readonly (readonly (readonly number[] | null)[])[];
  readonly #fold: boolean;
  readonly #names: boolean;
  readonly #ids = new Map<string, number>();
  readonly #sets: number[][] = [];
  readonly #elements: Element[] = [];
  readonly #elementIds = new Map<string, number>();
  readonly #steps = new Map<string, number>();
  readonly #accepts = new Map<string, boolean>();

  constructor(glob: GlobStructure, part: 'match' | 'folder', fold: boolean) {
    this.#alts = part === 'match' ? glob.alternatives : glob.folders;
    this.#alts32 = this.#alts.map((segments) =>
      segments.map((s) => (s.kind === 'literal' ? Array.from(s.text, (c) => c.codePointAt(0)!) : null)),
    );
    this.#fold = fold;
    this.#names = glob.names;
  }

  #element(alt: number, seg: number, pos: number): number {
    const key = `${alt},${seg},${pos}`;
    let id = this.#elementIds.get(key);
    if (id === undefined) {
      id = this.#elements.length;
      this.#elements.push({ alt, seg, pos });
      this.#elementIds.set(key, id);
    }
    return id;
  }

  #intern(set: Iterable<number>): number {
    const sorted = [...new Set(set)].sort((a, b) => a - b);
    const key = sorted.join(',');
    let id = this.#ids.get(key);
    if (id === undefined) {
      id = this.#sets.length;
      this.#sets.push(sorted);
      this.#ids.set(key, id);
    }
    return id;
  }

  /** The elements that start the segments at positions `starts` (closed over `**` matching no segment). */
  #spawn(alt: number, starts: Iterable<number>, out: number[]): void {
    const segments = this.#alts[alt]!;
    const positions = closeGlobstars(segments, starts);
    for (const i of positions) {
      if (i >= segments.length) continue;
      const s = segments[i]!;
      if (s.kind === 'literal') out.push(this.#element(alt, i, 0));
      else if (s.kind === 'wild') for (const j of closeStars(s.tokens, [0])) out.push(this.#element(alt, i, j));
      else out.push(this.#element(alt, i, 0));
    }
  }

  initial(): number {
    const out: number[] = [];
    for (let a = 0; a < this.#alts.length; a++) this.#spawn(a, [0], out);
    return this.#intern(out);
  }

  isEmpty(state: number): boolean {
    return this.#sets[state]!.length === 0;
  }

  /** The segment positions each element leads to when its segment ends holding `cls`. */
  #complete(state: number, cls: number): Map<number, number[]> {
    const next = new Map<number, number[]>();
    for (const id of this.#sets[state]!) {
      const e = this.#elements[id]!;
      const s = this.#alts[e.alt]![e.seg]!;
      let to: number | null = null;
      if (s.kind === 'literal') {
        if (e.pos === this.#alts32[e.alt]![e.seg]!.length) to = e.seg + 1;
      } else if (s.kind === 'wild') {
        if (e.pos === s.tokens.length && cls !== EMPTY && (s.dotted || (cls !== DOT && cls !== DOTDOT))) to = e.seg + 1;
      } else if (cls !== DOT && cls !== DOTDOT) {
        to = s.kind === 'globstar' ? e.seg : e.seg + 1;
      }
      if (to === null) continue;
      const list = next.get(e.alt) ?? [];
      list.push(to);
      next.set(e.alt, list);
    }
    return next;
  }

  step(state: number, cp: number, cls: number): number {
    const key = `${state},${cp},${cls}`;
    const known = this.#steps.get(key);
    if (known !== undefined) return known;
    const out: number[] = [];
    if (cp === 0x2f && !this.#names) {
      for (const [alt, to] of this.#complete(state, cls)) this.#spawn(alt, to, out);
    } else {
      const c = this.#fold ? foldCodePoint(cp) : cp;
      for (const id of this.#sets[state]!) {
        const e = this.#elements[id]!;
        const s = this.#alts[e.alt]![e.seg]!;
        if (s.kind === 'literal') {
          if (this.#alts32[e.alt]![e.seg]![e.pos] === c) out.push(this.#element(e.alt, e.seg, e.pos + 1));
        } else if (s.kind === 'wild') {
          const t = s.tokens[e.pos];
          if (t === undefined) continue;
          let to: number | null = null;
          if (t.kind === 'star') to = e.pos;
          else if (t.kind === 'any' || (t.kind === 'char' ? t.cp === c : inClass(t, c))) to = e.pos + 1;
          if (to !== null) for (const j of closeStars(s.tokens, [to])) out.push(this.#element(e.alt, e.seg, j));
        } else {
          out.push(id);
        }
      }
    }
    const id = this.#intern(out);
    this.#steps.set(key, id);
    return id;
  }

  accepts(state: number, cls: number): boolean {
    const key = `${state},${cls}`;
    const known = this.#accepts.get(key);
    if (known !== undefined) return known;
    let yes = false;
    for (const [alt, to] of this.#complete(state, cls)) {
      const segments = this.#alts[alt]!;
      if (closeGlobstars(segments, to).has(segments.length)) {
        yes = true;
        break;
      }
    }
    this.#accepts.set(key, yes);
    return yes;
  }
}

function closeGlobstars(segments: readonly GlobSegment[], starts: Iterable<number>): Set<number> {
  const out = new Set<number>();
  const pending = [...starts];
  while (pending.length > 0) {
    const i = pending.pop()!;
    if (out.has(i)) continue;
    out.add(i);
    if (segments[i]?.kind === 'globstar') pending.push(i + 1);
  }
  return out;
}

function closeStars(tokens: readonly GlobToken[], starts: readonly number[]): number[] {
  const out = new Set<number>();
  for (let j of starts) {
    out.add(j);
    while (tokens[j]?.kind === 'star') out.add(++j);
  }
  return [...out];
}

/** ASCII upper case to lower case: how a case-insensitive test reads an ASCII letter of the raw text. */
function foldCodePoint(cp: number): number {
  return cp >= 0x41 && cp <= 0x5a ? cp + 0x20 : cp;
}

// ---- the per-component state machines behind one interface ----

export interface Machine {
  initial(): number;
  step(state: number, cp: number, cls: number): number;
  /** The bit at the end of the input. */
  accepts(state: number, cls: number): boolean;
  /** The bit can no longer change, whatever follows: its value, else null. */
  fixed(state: number): boolean | null;
}

function globMachine(c: Extract<Component, { kind: 'glob' }>): Machine {
  const m = new GlobMachine(c.glob, c.part, c.fold);
  // The trailing-slash rule: one trailing "/" is ignored (not after a backslash), and "/" alone reads as
  // the empty path. The state is a pair: the machine's state, and the state before a last "/" (-1: none).
  // ("//" strips to "/", which reads as the empty path too: the flag marks an input of one "/" so far.)
  const pairs: [number, number, number][] = [];
  const ids = new Map<string, number>();
  const BACKSLASH = 1;
  const ONLY_SLASH = 2;
  const pair = (s: number, pre: number, flags: number): number => {
    const key = `${s},${pre},${flags}`;
    let id = ids.get(key);
    if (id === undefined) {
      id = pairs.length;
      pairs.push([s, pre, flags]);
      ids.set(key, id);
    }
    return id;
  };
  const names = c.glob.names;
  const init = m.initial();
  let first = -1;
  return {
    initial: () => (first = pair(init, -1, 0)),
    step: (state, cp, cls) => {
      const [s, , flags] = pairs[state]!;
      const next = m.step(s, cp, cls);
      if (names || cp !== 0x2f) return pair(next, -1, cp === 0x5c ? BACKSLASH : 0);
      if (state === first) return pair(next, init, ONLY_SLASH);
      const pre = flags & ONLY_SLASH ? init : flags & BACKSLASH ? -1 : s;
      return pair(next, pre, 0);
    },
    accepts: (state, cls) => {
      const [s, pre] = pairs[state]!;
      // The class before the stripped "/" is not known here; the caller passes the class of the segment
      // that ends the input, which for a stripped "/" is the segment before it (see PRE_CLASS below).
      if (pre >= 0) return m.accepts(pre, preClass(cls));
      return m.accepts(s, cls & 3);
    },
    fixed: (state) => {
      const [s, pre] = pairs[state]!;
      return m.isEmpty(s) && pre < 0 ? false : null;
    },
  };
}

// The tracker keeps, beside the current segment's class, the class of the segment before the last "/",
// packed as cls | (before << 2): a stripped trailing "/" ends the input in the segment before it.
function preClass(packed: number): number {
  return packed >> 2;
}

function prefixMachine(text: string): Machine {
  const cps = Array.from(text, (c) => c.codePointAt(0)!);
  const n = cps.length;
  // state: matched count 0..n (n: holds for good), n + 1: failed for good
  return {
    initial: () => 0,
    step: (state, cp) => (state >= n ? state : cps[state] === cp ? state + 1 : n + 1),
    accepts: (state) => state === n,
    fixed: (state) => (state === n ? true : state === n + 1 ? false : null),
  };
}

/**
 * A string that resolvePath (matchers.ts) gives back unchanged, absolute or relative as asked: no control
 * character or backslash, no percent-escape, no leading `~` or URL scheme, no empty, `.` or `..` segment,
 * no segment ending in a dot or a space ("/" alone is the root).
 */
function cleanMachine(absolute: boolean): Machine {
  // state fields: started, abs, seg class (0 empty, 1 dot, 2 dotdot, 3 trailing dot/space, 4 other),
  // pct (0, 1 after %, 2 after % and a hex digit), scheme (0 not possible, 1 still possible), root-only
  const states: string[] = [];
  const ids = new Map<string, number>();
  const DEAD = -1;
  const intern = (key: string): number => {
    let id = ids.get(key);
    if (id === undefined) {
      id = states.length;
      states.push(key);
      ids.set(key, id);
    }
    return id;
  };
  const init = intern('0,0,0,0,0,0');
  const isHex = (cp: number): boolean =>
    (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x46) || (cp >= 0x61 && cp <= 0x66);
  const isAlpha = (cp: number): boolean => (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a);
  const schemeChar = (cp: number): boolean =>
    isAlpha(cp) || (cp >= 0x30 && cp <= 0x39) || cp === 0x2b || cp === 0x2e || cp === 0x2d;
  const control = (cp: number): boolean => cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
  const segOk = (seg: number): boolean => seg === 4;
  const memo = new Map<string, number>();
  return {
    initial: () => init,
    step: (state, cp) => {
      if (state === DEAD) return DEAD;
      const key = `${state},${cp}`;
      const known = memo.get(key);
      if (known !== undefined) return known;
      const [started, abs, seg, pct, scheme] = states[state]!.split(',').map(Number) as [
        number,
        number,
        number,
        number,
        number,
      ];
      let next: number;
      if (control(cp) || cp === 0x5c) next = DEAD;
      else if (pct === 2 && isHex(cp)) next = DEAD;
      else if (!started) {
        if (cp === 0x7e) next = DEAD;
        else if (cp === 0x2f) next = absolute ? intern('1,1,0,0,0,1') : DEAD;
        else if (absolute) next = DEAD;
        else
          next = intern(`1,0,${cp === 0x2e ? 1 : cp === 0x20 ? 3 : 4},${cp === 0x25 ? 1 : 0},${isAlpha(cp) ? 1 : 0},0`);
      } else if (cp === 0x2f) {
        // A separator: the segment it ends must be a clean name (the root's empty segment comes first).
        if (!segOk(seg)) next = DEAD;
        else next = intern(`1,${abs},0,0,0,0`);
      } else if (scheme === 1 && cp === 0x3a) {
        next = DEAD;
      } else {
        let s2: number;
        if (cp === 0x2e) s2 = seg === 0 ? 1 : seg === 1 ? 2 : 3;
        else if (cp === 0x20) s2 = 3;
        else s2 = 4;
        const p2 = cp === 0x25 ? 1 : pct === 1 && isHex(cp) ? 2 : 0;
        const sc = scheme === 1 && schemeChar(cp) ? 1 : 0;
        next = intern(`1,${abs},${s2},${p2},${sc},0`);
      }
      memo.set(key, next);
      return next;
    },
    accepts: (state) => {
      if (state === DEAD) return false;
      const [started, abs, seg, , , root] = states[state]!.split(',').map(Number) as number[];
      if (!started) return false;
      if (abs === 1 && root === 1) return absolute; // "/" alone: the root
      return (abs === 1) === absolute && segOk(seg!);
    },
    fixed: (state) => (state === DEAD ? false : null),
  };
}

export function machineOf(c: Component): Machine {
  if (c.kind === 'glob') return globMachine(c);
  if (c.kind === 'prefix') return prefixMachine(c.text);
  return cleanMachine(c.absolute);
}

// ---- excluded strings: a trie ----

export function excludeMachine(strings: readonly string[]): Machine {
  const children: Map<number, number>[] = [new Map()];
  const terminal: boolean[] = [false];
  for (const s of strings) {
    let node = 0;
    for (const ch of s) {
      const cp = ch.codePointAt(0)!;
      let next = children[node]!.get(cp);
      if (next === undefined) {
        next = children.length;
        children.push(new Map());
        terminal.push(false);
        children[node]!.set(cp, next);
      }
      node = next;
    }
    terminal[node] = true;
  }
  // state: trie node, or -1 once the input left every excluded string (bit: "is not excluded")
  return {
    initial: () => 0,
    step: (state, cp) => (state < 0 ? -1 : (children[state]!.get(cp) ?? -1)),
    accepts: (state) => state < 0 || !terminal[state],
    fixed: (state) => (state < 0 ? true : null),
  };
}
