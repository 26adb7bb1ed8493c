// The README section and the example are run, so what they show is what the code does.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../src/cli/program.js';
import { main } from '../../examples/policy-file.js';
import { readFileSync } from 'node:fs';

const readme = readFileSync(new URL('../../docs/policy-files.md', import.meta.url), 'utf8');

function block(lang: string, after = 0): string {
  const start = readme.indexOf(`\`\`\`${lang}\n`, after);
  if (start < 0) throw new Error(`no ${lang} block`);
  const body = start + lang.length + 4;
  return readme.slice(body, readme.indexOf('```', body));
}

describe('docs/policy-files.md', () => {
  it('its policy lints clean, and its explain output is what the CLI prints', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-readme-'));
    const file = join(dir, 'policy.yaml');
    await writeFile(file, block('yaml'));
    let out = '';
    const io = { stdout: (t: string) => (out += t), stderr: (t: string) => (out += t) };
    expect(await run(['lint', file], io)).toBe(0);
    const from = readme.indexOf('$ toolgate explain');
    const shown = readme.slice(from + 2, readme.indexOf('```', from));
    const [command, ...expected] = shown.trimEnd().split('\n');
    const args = command!
      .match(/'[^']*'|\S+/g)!
      .slice(1)
      .map((a) => a.replace(/^'|'$/g, '').replace('policy.yaml', file));
    out = '';
    expect(await run(args, io)).toBe(3);
    expect(out.trimEnd().replace(/policy-file-[0-9a-f]+/, 'V')).toBe(
      expected.join('\n').replace(/policy-file-[0-9a-f]+/, 'V'),
    );
  });
});

describe('examples/policy-file.ts', () => {
  it('runs, allowing /data and refusing the traversal by rule', async () => {
    const lines: string[] = [];
    await main((line) => lines.push(line));
    expect(lines[0]).toBe('read_file /data/report.txt: ok (read_data_only) contents of /data/report.txt');
    expect(lines[1]).toMatch(/^read_file \/data\/\.\.\/etc\/passwd: refused \(deny_other_reads\)/);
    expect(lines).toContain(
      '  read_data_only: not_matched — path is a path within /data/**: "/data/../etc/passwd" resolves to "/etc/passwd", does not hold',
    );
  });
});
