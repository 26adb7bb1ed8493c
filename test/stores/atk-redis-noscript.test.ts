/**
 * Attacks on how the counter script is run (by SHA, loaded on NOSCRIPT) with the reply read in the same step:
 * a script flushed mid-flight is loaded and run once more (no call decided twice, none left undecided); any
 * other error is not retried; a reply the store cannot read rejects (the call is refused, never run). A fake
 * client: flushing scripts on the shared server would break other runs' tests.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Script } from '../../src/stores/redis-scripts.js';

function fakeClient(replies: (() => Promise<unknown>)[]): { client: Redis; evals: number; loads: number } {
  const state = { client: null as unknown as Redis, evals: 0, loads: 0 };
  state.client = {
    status: 'ready',
    options: {},
    evalsha: () => {
      state.evals++;
      const next = replies.shift();
      return next ? next() : Promise.reject(new Error('no reply left'));
    },
    script: () => {
      state.loads++;
      return Promise.resolve('sha');
    },
  } as unknown as Redis;
  return state;
}

const noscript = (): Promise<unknown> => Promise.reject(new Error('NOSCRIPT No matching script.'));

describe('the counter script run by SHA', () => {
  it('loads a script flushed mid-flight and runs it once more, its reply read', async () => {
    const script = new Script('return 1');
    const fake = fakeClient([() => Promise.resolve('first'), noscript, () => Promise.resolve('second')]);
    expect(await script.run(fake.client, ['k'], ['1'], (r) => `read ${String(r)}`)).toBe('read first');
    expect(await script.run(fake.client, ['k'], ['1'], (r) => `read ${String(r)}`)).toBe('read second');
    expect(fake.evals).toBe(3);
    // Loaded for the first call, and again once flushed.
    expect(fake.loads).toBe(2);
  });

  it('does not run it again after any other error (a timeout), and rejects', async () => {
    const script = new Script('return 2');
    const fake = fakeClient([
      () => Promise.resolve('first'),
      () => Promise.reject(new Error('Command timed out')),
      () => Promise.resolve('never'),
    ]);
    await script.run(fake.client, ['k'], ['1'], (r) => r);
    await expect(script.run(fake.client, ['k'], ['1'], (r) => r)).rejects.toThrow('timed out');
    expect(fake.evals).toBe(2);
  });

  it('rejects when the reply after a reload cannot be read, or the reload fails again', async () => {
    const script = new Script('return 3');
    const fake = fakeClient([
      () => Promise.resolve('ok'),
      noscript,
      () => Promise.resolve('garbage'),
      noscript,
      noscript,
    ]);
    const read = (r: unknown): string => {
      if (r !== 'ok') throw new Error(`unreadable ${String(r)}`);
      return r;
    };
    expect(await script.run(fake.client, [], [], read)).toBe('ok');
    await expect(script.run(fake.client, [], [], read)).rejects.toThrow('unreadable garbage');
    await expect(script.run(fake.client, [], [], read)).rejects.toThrow('NOSCRIPT');
  });
});
