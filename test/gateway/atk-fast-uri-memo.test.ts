// Attacks on normalResourceUri's memo of the last 1,024 short URIs (policy-file/uri.ts): spellings that differ
// only in case, percent-encoding, Unicode form, trailing dots or length around the memo's bound, asked in
// turn so one is answered from memory right after another: each answer must be the one a fresh
// normalisation gives (after the memo forgot it), and no answer may be an object shared with another.
import { describe, expect, it } from 'vitest';
import { normalResourceUri } from '../../src/policy-file/uri.js';

const SPELLINGS = [
  'docs://secret/keys',
  'docs://SECRET/keys',
  'docs://secret/KEYS',
  'DOCS://secret/keys',
  'docs://secret./keys',
  'docs://secret../keys',
  'docs://secret/keys.',
  'docs://secret/%6Beys',
  'docs://secret/%6beys',
  'docs://secret/%2Fkeys',
  'docs://secret/k\u00e9ys',
  'docs://secret/ke\u0301ys',
  'docs://secret/k%C3%A9ys',
  'docs://secret/ke%CC%81ys',
  'docs://secret/\ud800',
  'docs://secret/keys\u0000',
  'docs://public/../secret/keys',
  'file:///srv//data/../secrets/key',
  `docs://kb/${'a'.repeat(500)}`,
  `docs://kb/${'a'.repeat(501)}`,
  `docs://kb/${'A'.repeat(501)}`,
];

describe('attacks on the resource URI memo', () => {
  it('answers every spelling, asked in turn and again, as a fresh normalisation does, in an object of its own', () => {
    const first = SPELLINGS.map((uri) => normalResourceUri(uri));
    const seen = new Set<object>(first);
    for (let round = 0; round < 3; round++)
      for (const [i, uri] of [...SPELLINGS.entries()].reverse()) {
        const again = normalResourceUri(uri);
        expect(again, uri).toEqual(first[i]);
        expect(seen.has(again), uri).toBe(false);
        seen.add(again);
        // A caller that changes its answer changes nothing for the next.
        (again as { uri?: string; problem?: string }).uri = 'docs://public/readme';
      }
    // The memo forgets them (more than it holds), then normalises them again: the same answers.
    for (let i = 0; i < 2100; i++) normalResourceUri(`docs://kb/filler/${i}`);
    expect(SPELLINGS.map((uri) => normalResourceUri(uri))).toEqual(first);
    // What must be refused is refused; what is one name is one name.
    const by = (uri: string) => first[SPELLINGS.indexOf(uri)]!;
    expect(by('docs://secret/%2Fkeys').ok).toBe(false);
    expect(by('docs://secret/keys\u0000').ok).toBe(false);
    expect(by('docs://SECRET/keys')).toEqual(by('docs://secret/keys'));
    expect(by('docs://secret/%6beys')).toEqual(by('docs://secret/keys'));
    expect(by('docs://secret/ke\u0301ys')).toEqual(by('docs://secret/k\u00e9ys'));
    expect(by('docs://secret/KEYS')).not.toEqual(by('docs://secret/keys'));
  });
});
