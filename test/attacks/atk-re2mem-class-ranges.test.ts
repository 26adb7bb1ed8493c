/**
 * Attack (src/schema-regexp.ts, branch atk-re2mem): a pattern's RE2 programs are bounded by instructions
 * (MAX_PROGRAM, src/schema-regexp-size.ts), but a class is one instruction however many ranges it holds, and a
 * property escape writes hundreds of them out in six characters (`\p{Lu}`: 655 ranges, ~5,900 characters of
 * `\x{…}` in the translation). A 17 KB pattern of 2,900 `\p{Lu}` is 2,913 instructions (under the bound): its
 * translation is 17 million characters, and registering it cost 2.3–2.5 s of CPU and kept ~18 MB (load 5; node
 * --expose-gc, scratch script). One upstream's tools/list of 4 MB holds ~230 such patterns: minutes of event loop
 * and ~4 GB. Repeats (`(?:\p{Lu}\p{Ll}){600}`) share their ranges in RE2 and cost nothing: only written-out classes.
 * The MCP upstream writes the pattern.
 */
import { describe, expect, it } from 'vitest';
import { registryWith } from './fixtures/schema-tool.js';
import { cpuMs } from '../cpu.js';

/** Registers `pattern`: refused is fine (fail closed), the CPU it took is what is asked. */
function registerMs(pattern: string): number {
  return cpuMs(() => {
    try {
      registryWith({ type: 'object', properties: { to: { type: 'string', pattern } } });
    } catch (error) {
      expect(String(error)).toMatch(/not supported: too large/);
    }
  })[1];
}

describe('classes written out by property escapes', () => {
  // Warm the property sets read (a few ms each), so only the translation and RE2 are measured.
  registerMs('^\\p{Lu}\\p{Ll}x$');

  it.each([
    ['2,900 escapes in a row', `^${'\\p{Lu}'.repeat(2_900)}$`],
    ['2,900 classes of one escape and a letter', `^${'[\\p{Lu}x]'.repeat(2_900)}$`],
    ['one class of 2,900 escapes', `^[${'\\p{Lu}\\p{Ll}'.repeat(1_450)}]$`],
    ['2,900 negated escapes', `^${'\\P{Ll}'.repeat(2_900)}$`],
  ])('%s: compiled or refused in bounded time', (_, pattern) => {
    const ms = registerMs(pattern);
    // main (83fbaf6): 2,300–2,500 ms for the first (load 5); now refused in tens of ms.
    expect(ms, `${Math.round(ms)} ms of CPU`).toBeLessThan(500);
  });

  it('a pattern with a few property classes still compiles and checks as ECMAScript does', async () => {
    const pattern = `^[\\p{L}\\p{N}_-]+(?: [\\p{L}\\p{N}_-]+)*\\p{Lu}{0,3}${'\\P{Cc}'.repeat(10)}$`;
    const { registry, ran } = registryWith({ type: 'object', properties: { to: { type: 'string', pattern } } });
    for (const to of ['Ωmega 12 ÉÀ0123456789', 'a b ABC0123456789', 'a  b0123456789', 'ab\u0001123456789']) {
      const result = await registry.invoke('pay', { to });
      expect(result.status === 'ok', to).toBe(new RegExp(pattern, 'u').test(to));
    }
    expect(ran.length).toBeGreaterThan(0);
  });
});
