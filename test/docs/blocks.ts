/**
 * The TypeScript code blocks of README.md and docs/*.md, extracted so that a test can type-check and run
 * them: what the documentation shows is what the code does.
 *
 * Every ```ts block is type-checked. It is also run, unless the line before its fence is
 * `<!-- typecheck-only: why -->` (a block that needs a real model, a network service or a secret). A block
 * imports from `toolgate` and its subpaths as a user would; the imports are pointed at `src/` here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface DocBlock {
  /** `README.md` or `docs/<page>.md`. */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly code: string;
  readonly run: boolean;
}

const ROOT = new URL('../../', import.meta.url).pathname;

/** The Markdown files whose blocks are checked. */
export function docFiles(): string[] {
  const pages = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...pages];
}

export function blocksOf(file: string): DocBlock[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```ts') continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!);
    const marker = lines[start - 1] ?? '';
    blocks.push({ file, line: start + 1, code: body.join('\n'), run: !marker.startsWith('<!-- typecheck-only') });
  }
  return blocks;
}

/** `toolgate` and `toolgate/<sub>` → the source file behind that export, as seen from `fromDir` (inside ROOT). */
export function pointAtSource(code: string, fromDir: string): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { import: string }>;
  };
  const up = relative(fromDir, ROOT) || '.';
  return code.replace(/from '(toolgate(?:\/[^']+)?)'/g, (whole, spec: string) => {
    const target = pkg.exports[spec === 'toolgate' ? '.' : `./${spec.slice('toolgate/'.length)}`];
    if (target === undefined || typeof target === 'string') return whole;
    return `from '${up}/${target.import.replace(/^\.\/dist\//, 'src/')}'`;
  });
}

/** One `## ` section of a Markdown file, heading included, up to the next `## ` heading. */
export function docSection(file: string, heading: string): string {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const start = text.indexOf(`\n## ${heading}`);
  if (start < 0) throw new Error(`${file} has no section "## ${heading}"`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start + 1, end < 0 ? undefined : end);
}
