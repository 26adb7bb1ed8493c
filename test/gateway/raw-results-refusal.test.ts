// A refused upstream result as every path of the gateway words it (src/gateway/raw-results.ts): the SDK Client's
// 2025-era codec's schema and words, the message bounded (the SDK's own is pretty-printed JSON of every issue).
import { SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { boundedRefusal, legacyResult } from '../../src/gateway/raw-results.js';
import { OUTPUT_ISSUES_MAX_CHARS as REFUSAL_MAX_CHARS } from '../../src/mcp/index.js';

const refusal = (method: string, raw: unknown): SdkError => {
  try {
    legacyResult(method, raw);
  } catch (error) {
    return error as SdkError;
  }
  throw new Error('taken');
};

describe('a refused result', () => {
  it('is refused as the SDK Client refuses it: structuredContent a record, content beside another family', () => {
    for (const raw of [
      { content: [], structuredContent: [1] },
      { content: [], structuredContent: null },
      { inputRequests: {} },
      { task: { taskId: 't' } },
    ]) {
      const error = refusal('tools/call', raw);
      expect(error.code).toBe(SdkErrorCode.InvalidResult);
      expect(error.message).toMatch(/^Invalid result for tools\/call: \[\n {2}\{/);
    }
    expect(legacyResult('tools/call', { structuredContent: { n: 1 } })).toEqual({
      content: [],
      structuredContent: { n: 1 },
    });
    expect(refusal('resources/read', { contents: 'x' }).message).toContain('"expected": "array"');
  });

  it('says at most REFUSAL_MAX_CHARS characters, the cut said; a short one, another error and a cut one as they are', () => {
    const long = refusal('tools/call', { content: Array.from({ length: 40 }, () => ({ type: 'text' })) });
    expect(long.message).toHaveLength(REFUSAL_MAX_CHARS);
    expect(long.message).toMatch(/^Invalid result for tools\/call: \[/);
    expect(long.message).toMatch(/ … \(cut: \d{6} characters\)$/);
    expect(boundedRefusal(long)).toBe(long);
    const short = new SdkError(SdkErrorCode.InvalidResult, 'Invalid result for tools/call: x');
    expect(boundedRefusal(short)).toBe(short);
    const other = new SdkError(SdkErrorCode.RequestTimeout, 'x'.repeat(REFUSAL_MAX_CHARS + 1));
    expect(boundedRefusal(other)).toBe(other);
  });
});
