import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { policySchema } from '../../src/policy-file/index.js';
import { importGraph, ROOT_ENTRY_PACKAGES } from '../import-graph.js';

const root = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
  dependencies: Record<string, string>;
  files: string[];
};

describe('the package', () => {
  it('keeps policy files and the CLI out of the root entry (no yaml, js-yaml, commander or picocolors): Ajv and re2js only', () => {
    const { files, packages } = importGraph(join(root, 'src', 'index.ts'));
    expect([...packages].filter((name) => !name.startsWith('node:')).sort()).toEqual(ROOT_ENTRY_PACKAGES);
    expect([...files].some((f) => f.includes('policy-file') || f.includes(`${'src'}/cli`))).toBe(false);
  });

  it('exports the loader, the schema and the bin, with their runtime dependencies', () => {
    expect(pkg.exports['./policy']).toEqual({
      types: './dist/policy-file/index.d.ts',
      import: './dist/policy-file/index.js',
    });
    expect(pkg.exports['./policy.schema.json']).toBe('./schema/policy.schema.json');
    expect(pkg.files).toContain('schema');
    for (const dep of ['yaml', 'js-yaml', 'commander', 'picocolors', 'ajv'])
      expect(pkg.dependencies[dep]).toBeDefined();
  });

  it('ships a schema that accepts the example policy and is the one the loader uses', () => {
    const schema = JSON.parse(readFileSync(join(root, 'schema', 'policy.schema.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(policySchema()).toEqual(schema);
    const validate = new Ajv({ strict: false }).compile(schema);
    const example = parse(readFileSync(join(root, 'examples', 'policies', 'concierge.yaml'), 'utf8')) as unknown;
    expect(validate(example)).toBe(true);
    expect(validate({ version: 2 })).toBe(false);
  });
});
