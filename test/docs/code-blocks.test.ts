// Every ```ts block of README.md and docs/*.md is type-checked against the source, and run unless it is
// marked typecheck-only: examples in the documentation cannot drift from the code.
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blocksOf, docFiles, pointAtSource, type DocBlock } from './blocks.js';

const ROOT = new URL('../../', import.meta.url).pathname.replace(/\/$/, '');
const DIR = join(ROOT, 'test', 'docs', '.blocks');
const blocks = docFiles().flatMap(blocksOf);
const fileOf = (b: DocBlock): string => join(DIR, `${b.file.replace(/[/.]/g, '_')}_L${b.line}.ts`);

beforeAll(() => {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  for (const b of blocks) writeFileSync(fileOf(b), `${pointAtSource(b.code, DIR)}\nexport {};\n`);
  writeFileSync(
    join(DIR, 'tsconfig.json'),
    JSON.stringify({ extends: '../../../tsconfig.json', include: ['*.ts'], compilerOptions: { noEmit: true } }),
  );
});

afterAll(() => rmSync(DIR, { recursive: true, force: true }));

describe('documentation code blocks', () => {
  it('there are blocks to check, and every documentation page is reached', () => {
    expect(blocks.length).toBeGreaterThan(10);
  });

  it('type-check', async () => {
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await promisify(execFile)(process.execPath, [tsc, '-p', join(DIR, 'tsconfig.json')], {
      cwd: ROOT,
    }).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    // Name the Markdown file and line of each error, not the generated file.
    const readable = result.replace(/test\/docs\/\.blocks\/([A-Za-z_-]+)_(md)_L(\d+)\.ts/g, (_m, f: string, _e, l) => {
      return `${f.replace(/^docs_/, 'docs/')}.md (block at line ${l})`;
    });
    expect(readable).toBe('');
  }, 120_000);

  for (const b of blocks.filter((x) => x.run)) {
    it(`runs ${b.file}:${b.line}`, async () => {
      await import(pathToFileURL(fileOf(b)).href);
    });
  }
});
