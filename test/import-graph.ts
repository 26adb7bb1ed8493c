/**
 * The import graph of a source file, read as text: every module it reaches through relative `import … from` /
 * `export … from` lines, and every package named on the way. For the tests that keep packages out of an entry.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Every module `entry` reaches through relative imports, and every package it imports. */
export function importGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const [, spec] of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'/g)) {
      if (spec!.startsWith('.')) visit(resolve(dirname(file), spec!.replace(/\.js$/, '.ts')));
      else packages.add(spec!);
    }
  };
  visit(entry);
  return { files, packages };
}

/**
 * The packages the root entry (`toolgate`) may import, sorted: Ajv, its dialects and formats, and re2js — no policy
 * file parser, no CLI, no optional peer (better-sqlite3, the stores' clients).
 */
export const ROOT_ENTRY_PACKAGES: readonly string[] = [
  'ajv',
  'ajv/dist/runtime/equal.js', // uniqueItems, enum, const: Ajv's equal for a value that is not plain data
  'ajv/dist/vocabularies/validation/const.js', // Ajv's const, its error and its code for $data
  'ajv/dist/vocabularies/validation/enum.js', // Ajv's enum, likewise
  'ajv/dist/2019.js',
  'ajv/dist/2020.js',
  'ajv-formats',
  're2js',
].sort();
