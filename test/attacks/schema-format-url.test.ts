/**
 * Attack (argument validation, src/schema.ts `withFormats`): `format: "url"` is ajv-formats' own format (not JSON
 * Schema's `uri`), whose expression (dperini's) refuses what a fetching tool must not reach: loopback, private and
 * link-local addresses (127.0.0.1, 10/8, 172.16/12, 192.168/16, 169.254.169.254 — the cloud metadata service) and a
 * host without a top-level domain (`localhost`). Its replacement in linear time (173fa5e: an http(s)/ftp URL without
 * whitespace that the WHATWG parser reads) let all of them through: a tool whose schema says `format: "url"` fetched
 * http://169.254.169.254/latest/meta-data/. The check is ajv-formats' expression again, with its quadratic part (the
 * user information, `\S+(?::\S*)?@`, the same strings as `\S+@`) rewritten, and still the WHATWG parser's.
 */
import { describe, expect, it } from 'vitest';
import { runsWith } from './fixtures/schema-tool.js';

const D2020 = 'https://json-schema.org/draft/2020-12/schema';
const schema = { type: 'object', properties: { url: { type: 'string', format: 'url' } } };

async function runs(url: string): Promise<boolean> {
  const plain = await runsWith(schema, { url });
  expect(await runsWith({ $schema: D2020, ...schema }, { url })).toBe(plain);
  return plain;
}

describe('format url', () => {
  it.each([
    'http://169.254.169.254/latest/meta-data/',
    'http://127.0.0.1:8080/admin',
    'http://10.0.0.1/',
    'http://172.16.0.1/',
    'http://192.168.1.1/',
    'http://localhost/',
    'http://0x7f.1/',
    'http://2130706433/',
    'http://[::1]/',
    'http://user@127.0.0.1/',
  ])('%s is refused, as ajv-formats refuses it', async (url) => {
    expect(await runs(url)).toBe(false);
  });

  it.each([
    'https://example.com/x',
    'HTTP://Example.COM',
    'http://user:pass@example.com:8080/p?q=1#f',
    'ftp://ftp.example.org/file.txt',
    'http://8.8.8.8/',
    'http://a@b@example.com/x@y',
    'http://例え.テスト/',
  ])('%s runs', async (url) => {
    expect(await runs(url)).toBe(true);
  });

  it('refuses what it refused before (whitespace, no scheme, a port past 65535), in linear time', async () => {
    for (const url of ['example.com', 'https://exa mple.com', 'http://example.com:99999/'])
      expect(await runs(url)).toBe(false);
    // A million characters each: the user information's ambiguity, whitespace at the end, many @ and / .
    expect(await runs('http://'.repeat(150_000) + '@ ')).toBe(false);
    expect(await runs('http://' + 'a:'.repeat(500_000) + '@!')).toBe(false);
    expect(await runs('http://' + 'a@a.bb/'.repeat(150_000) + '\u3000')).toBe(false);
    expect(await runs('http://' + 'a@a.bb/'.repeat(150_000))).toBe(true);
  });
});
