/**
 * Attack on the deadlines' turn close (src/deadlines.ts): a turn opened on the real clock is closed by its nextTick
 * with whatever `performance` is installed when that tick runs. A call started on real timers, fake timers (with
 * `performance`) installed and advanced before its turn's tick: the turn is closed at the fake clock's time (here
 * 10^9 ms), and the queue's own clock is never rebased (no turn was opened under the fake). Back on real timers, the
 * call is due at 10^9 ms + 50 ms of the real clock: a tool that never settles is neither refused nor aborted for
 * ~11 days, though a later call times out. (Also at 412494d: not invoke3's.)
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hangingTool } from './fixtures/hanging-tool.js';

afterEach(() => {
  vi.useRealTimers();
});

describe("a turn closed while a fake clock's performance is installed", () => {
  it('a call started on real timers is still refused after its timeout once they are back', async () => {
    const { registry, aborted } = hangingTool(50);
    await new Promise((resolve) => setImmediate(resolve));
    const first = registry.invoke('hang', {}).then((result) => result.content); // its turn: the real clock's
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    vi.advanceTimersByTime(1e9);
    await Promise.resolve(); // the turn's tick runs: closed at the fake clock's time
    await new Promise((resolve) => process.nextTick(resolve));
    vi.useRealTimers();
    // A later call on real timers (its turn re-arms the one timer on the real clock): it times out, the first not.
    const later = registry.invoke('hang', {}).then((result) => result.content);
    const hung = (): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, 2_000, 'hung'));
    expect(await Promise.race([later, hung()])).toMatch(/within 50 ms/);
    expect(await Promise.race([first, hung()])).toMatch(/within 50 ms/);
    expect(aborted()).toBe(true);
  });
});
