import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonlAuditSink, type GatewayAuditRecord } from '../../src/gateway/audit.js';

const record = (n: number): GatewayAuditRecord => ({
  type: 'tool',
  time: new Date(0).toISOString(),
  caller: null,
  session: null,
  upstream: 'fs',
  decision: null,
  status: 'unavailable',
  reason: `r${n}`,
});

const lines = (file: string): string[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { reason: string }).reason);

describe('the JSONL audit sink (gateway --audit)', () => {
  it('has each line in the file when the sink returns (before the answer is written), in order', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-auditsink-')), 'audit.jsonl');
    const sink = jsonlAuditSink(file);
    for (let i = 0; i < 50; i++) {
      sink(record(i));
      // No await between the record and the read: a reader right after the answer finds the line.
      expect(lines(file).at(-1)).toBe(`r${i}`);
    }
    await sink.flush();
    expect(lines(file)).toEqual(Array.from({ length: 50 }, (_, i) => `r${i}`));
  });

  it('keeps writing to the same file after it is renamed away (the open descriptor), as before', () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-auditsink-'));
    const file = join(dir, 'audit.jsonl');
    const sink = jsonlAuditSink(file);
    sink(record(1));
    renameSync(file, join(dir, 'audit.1.jsonl'));
    sink(record(2));
    expect(lines(join(dir, 'audit.1.jsonl'))).toEqual(['r1', 'r2']);
  });

  it("with after: 'answer' (the stdio gateway), holds each record to the next tick, then writes them in order", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-auditsink-')), 'audit.jsonl');
    const sink = jsonlAuditSink(file, { after: 'answer' });
    sink(record(1));
    sink(record(2));
    // Not in the file yet: the answer the record is of goes out first (microtasks), then the line.
    expect(lines(file)).toEqual([]);
    await Promise.resolve();
    expect(lines(file)).toEqual([]);
    await new Promise((resolve) => process.nextTick(resolve));
    expect(lines(file)).toEqual(['r1', 'r2']);
    sink(record(3));
    await sink.flush(); // at close: what is held is written at once
    expect(lines(file)).toEqual(['r1', 'r2', 'r3']);
  });

  it("with after: 'answer', a record that cannot be written is reported and the others are written", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-auditsink-')), 'audit.jsonl');
    const sink = jsonlAuditSink(file, { after: 'answer' });
    const warnings: string[] = [];
    const warned = (warning: Error & { code?: string }) => warnings.push(`${warning.code}: ${warning.message}`);
    process.on('warning', warned);
    try {
      sink(record(1));
      sink({ ...record(2), reason: 10n } as unknown as GatewayAuditRecord);
      sink(record(3));
      await sink.flush();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', warned);
    }
    expect(lines(file)).toEqual(['r1', 'r3']);
    expect(warnings).toEqual([expect.stringMatching(/^TOOLGATE_AUDIT: .*BigInt/)]);
  });

  it("with after: 'answer', what is held when the process exits is in the file", () => {
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-auditsink-')), 'audit.jsonl');
    const script = [
      `import { jsonlAuditSink } from ${JSON.stringify(join(process.cwd(), 'src/gateway/audit.ts'))};`,
      `const sink = jsonlAuditSink(${JSON.stringify(file)}, { after: 'answer' });`,
      `for (let i = 0; i < 3; i++) sink(${JSON.stringify(record(0))});`,
      'process.exit(0);',
    ].join('\n');
    const ran = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(ran.status, ran.stderr).toBe(0);
    expect(lines(file)).toEqual(['r0', 'r0', 'r0']);
  });
});
