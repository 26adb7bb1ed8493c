import { readFileSync } from 'node:fs';

/** One `## ` section of README.md, heading included, up to the next `## ` heading. */
export function readmeSection(heading: string): string {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf(`\n## ${heading}`);
  if (start < 0) throw new Error(`README.md has no section "## ${heading}"`);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start + 1, end < 0 ? undefined : end);
}
