/**
 * Attack on the deadline queues' one timer (src/deadlines.ts) under a fake clock: a call started under fake timers
 * arms the queue's timer with the fake `setTimeout`; `vi.clearAllTimers()` (a test's own cleanup, fake timers still
 * installed) removes it, and the queue still takes it for armed. A later call's turn is then closed without arming
 * anything (its deadline is not sooner than the dead timer's), and however far the fake clock is advanced, its tool is
 * neither refused nor aborted — nor any later one's, until real timers are back. A timer per call (before issue 25)
 * would have been armed anew by each call. Fails on 8df4742 (and on f4aba2e, before stdio2): 'hung'.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { node, queueOf } from '../gate/fixtures/deadline-nodes.js';
import { hangingTool } from './fixtures/hanging-tool.js';

afterEach(() => {
  vi.useRealTimers();
});

const tick = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));

describe("a fake clock's timers cleared while a deadline queue's timer was armed on it", () => {
  it('a later hanging call is still refused after its timeout as the fake clock advances', async () => {
    const { registry, aborted } = hangingTool(50);
    await new Promise((resolve) => setImmediate(resolve));
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    void registry.invoke('hang', {}); // arms the queue's timer on the fake clock
    await tick();
    vi.clearAllTimers(); // the test's cleanup: that timer is gone
    let outcome: unknown = 'hung';
    void registry.invoke('hang', {}).then((result) => (outcome = result.content));
    await tick(); // its turn closed
    for (let i = 0; i < 20 && outcome === 'hung'; i++) {
      vi.advanceTimersByTime(100);
      await tick();
    }
    expect(outcome).toMatch(/within 50 ms/);
    expect(aborted()).toBe(true);
  });

  it('the structure itself: a deadline added after the clear still comes due', async () => {
    const { deadlines, expired } = queueOf();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    deadlines.add(node('a'), 50);
    await tick();
    vi.clearAllTimers();
    deadlines.add(node('b'), 50);
    await tick();
    vi.advanceTimersByTime(1_000);
    // b at least (a too: still queued, the timer armed again is armed for the first of them).
    expect(expired).toContain('b');
    expect(deadlines.size).toBe(0);
  });
});
