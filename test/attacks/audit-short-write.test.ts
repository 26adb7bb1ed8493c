import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// A write to a file that crosses the file-size limit (RLIMIT_FSIZE, or a disk that fills up) is cut short: the
// kernel writes what fits and returns its count, no error. The held batch of the stdio gateway (many calls' lines
// in one write) then lost its tail with no TOOLGATE_AUDIT report: calls ran whose lines never reach the file,
// and nothing said so.
describe('the JSONL audit sink on a short write (file-size limit / full disk)', () => {
  for (const after of ['answer', 'record'] as const) {
    it(`after: '${after}': every line is in the file, or the loss is reported (TOOLGATE_AUDIT)`, () => {
      const file = join(mkdtempSync(join(tmpdir(), 'toolgate-shortwrite-')), 'audit.jsonl');
      const script = [
        `import { jsonlAuditSink } from ${JSON.stringify(join(process.cwd(), 'src/gateway/audit.ts'))};`,
        `const sink = jsonlAuditSink(${JSON.stringify(file)}, { after: ${JSON.stringify(after)} });`,
        // 40 records of ~300 bytes in one tick: ~12 KiB, over the 8 KiB limit set below.
        `for (let i = 0; i < 40; i++) sink({ type: 'tool', time: 't', caller: 'c' + i, session: null, upstream: 'fs',`,
        `  decision: null, status: 'unavailable', reason: 'r' + i + 'x'.repeat(250) });`,
        'await sink.flush();',
      ].join('\n');
      const ran = spawnSync(
        'bash',
        ['-c', 'ulimit -f 8 && exec "$0" --import tsx --input-type=module -e "$1"', process.execPath, script],
        { encoding: 'utf8' },
      );
      expect(ran.status, ran.stderr).toBe(0);
      const written = readFileSync(file, 'utf8');
      expect(written.length).toBeGreaterThan(0); // the limit let some lines in
      const complete = written.endsWith('\n') && written.split('\n').length - 1 === 40;
      // Not all 40 fit: the sink must have said so.
      if (!complete) expect(ran.stderr).toMatch(/TOOLGATE_AUDIT/);
    });
  }
});
