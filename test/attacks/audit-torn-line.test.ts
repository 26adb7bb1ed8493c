import type * as nodeFs from 'node:fs';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';

// A full disk (ENOSPC) stops a write inside a line: part of it is in the file, without its newline. The next
// record, written once space is back, was appended to that torn part — one line that is no JSON, so a whole
// record (the first one after the disk filled up) was lost to every reader. Now the next write starts on a
// new line: the torn part stands alone and each later record is a whole line.
const disk = vi.hoisted(() => ({ fullAfter: Number.POSITIVE_INFINITY }));
vi.mock('node:fs', async (original) => {
  const fs = await original<typeof nodeFs>();
  // The next write takes `fullAfter` bytes, then the disk is full (the kernel's short write, then ENOSPC).
  const writeSync = (fd: number, data: string | Uint8Array, offset?: number): number => {
    const bytes = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data).subarray(offset ?? 0);
    if (disk.fullAfter === Number.POSITIVE_INFINITY) return fs.writeSync(fd, bytes);
    if (disk.fullAfter === 0)
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const wrote = fs.writeSync(fd, bytes.subarray(0, Math.min(disk.fullAfter, bytes.length)));
    disk.fullAfter -= wrote;
    return wrote;
  };
  return { ...fs, default: { ...fs, writeSync }, writeSync };
});

const { jsonlAuditSink } = await import('../../src/gateway/audit.js');

afterEach(() => {
  disk.fullAfter = Number.POSITIVE_INFINITY;
});

function record(caller: string): Parameters<ReturnType<typeof jsonlAuditSink>>[0] {
  return {
    type: 'tool',
    time: 't',
    caller,
    session: null,
    upstream: 'fs',
    decision: null,
    status: 'unavailable',
    reason: 'r',
  };
}

describe('the JSONL audit sink after a write torn by a full disk', () => {
  for (const after of ['answer', 'record'] as const) {
    it(`after: '${after}': the records written once space is back are whole lines`, async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'toolgate-torn-')), 'audit.jsonl');
      const sink = jsonlAuditSink(file, { after });
      const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
      sink(record('before'));
      await sink.flush();
      disk.fullAfter = 20;
      sink(record('torn'));
      await sink.flush();
      expect(warned.mock.calls.map(([text]) => String(text)).join()).toMatch(/no space left/);
      warned.mockRestore();
      disk.fullAfter = Number.POSITIVE_INFINITY;
      sink(record('after-1'));
      sink(record('after-2'));
      await sink.flush();
      const lines = readFileSync(file, 'utf8').split('\n');
      const callers = lines.flatMap((line) => {
        try {
          return [(JSON.parse(line) as { caller: string }).caller];
        } catch {
          return [];
        }
      });
      expect(callers).toEqual(['before', 'after-1', 'after-2']);
      // The torn part stands alone on its line (20 bytes of the 'torn' record).
      expect(lines[1]).toHaveLength(20);
    });
  }
});
