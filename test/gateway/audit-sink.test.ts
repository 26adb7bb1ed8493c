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
});
