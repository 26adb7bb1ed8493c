/** The adapter examples run (with tsx, as the README says) and show what they claim. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const example = async (file: string): Promise<string> => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', join('examples', file)], {
    cwd: process.cwd(),
    timeout: 60_000,
  });
  return stdout;
};

describe('adapter examples', () => {
  it('examples/ai-sdk.ts', async () => {
    const out = await example('ai-sdk.ts');
    expect(out).toMatch(/offered to the model: search, refund\n/);
    expect(out).toMatch(/refused refund/);
    expect(out).toMatch(/needs approval: refund \(refunds need a person\)/);
    expect(out).toMatch(/decision: refund → allow \(handler, asked adapter\)/);
  });

  it('examples/openai-agents.ts', async () => {
    const out = await example('openai-agents.ts');
    expect(out).toMatch(/decision: refund → deny \(refunds over 100 are not allowed\)/);
    expect(out).toMatch(/interrupted for approval: refund/);
    expect(out).toMatch(/final output: Refunded 20 EUR on o-7\./);
  });

  it('examples/mcp-client.ts', async () => {
    const out = await example('mcp-client.ts');
    expect(out).toMatch(/read → ok: buy milk/);
    expect(out).toMatch(/write → refused: .*ask_destructive/);
    expect(out).toMatch(/move → refused: .*layer not_declared/);
  });

  it('examples/mcp-proxy.ts', async () => {
    const out = await example('mcp-proxy.ts');
    expect(out).toMatch(/tools\/list: read_text_file, write_file\n/);
    expect(out).toMatch(/evil\.txt exists: false/);
    expect(out).toMatch(/write inbox: Successfully wrote/);
  });
});
