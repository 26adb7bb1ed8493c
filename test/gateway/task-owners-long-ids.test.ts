/**
 * An upstream's unfinished tasks are kept by the safeKey of their id (src/gateway/task-owners.ts; the id is the
 * upstream's, of any length): V8 hashes a string past 16,383 characters by its length alone, so ids of one such length,
 * differing at their end, were each compared with all the others. Counted, not timed: no Map is given a key that long,
 * and each id still has its own owner. (The relay's subscriptions need no such key: a resource URI is at most 4,096
 * characters, src/policy-file/uri.ts.)
 */
import { describe, expect, it } from 'vitest';
import { UnfinishedTasks } from '../../src/gateway/task-owners.js';
import { HASHED_LENGTH_MAX, watchLongestKey } from '../long-keys.js';

const long = (last: string) => `${'t'.repeat(20_000)}${last}`;
const longestKey = watchLongestKey();

describe("an upstream's task ids past 16,383 characters", () => {
  it("an upstream's unfinished tasks: each id its own owner, an ended one forgotten", () => {
    const tasks = new UnfinishedTasks();
    tasks.started('e1', long('a'), 60_000, 'alice');
    tasks.started('e1', long('b'), 60_000, 'bob');
    expect([...tasks.owners()].sort()).toEqual(['alice', 'bob']);
    tasks.ended('e1', long('a'));
    expect([...tasks.owners()]).toEqual(['bob']);
    tasks.ended('e2', long('b'));
    expect([...tasks.owners()]).toEqual(['bob']);
    expect(longestKey()).toBeLessThanOrEqual(HASHED_LENGTH_MAX);
  });
});
