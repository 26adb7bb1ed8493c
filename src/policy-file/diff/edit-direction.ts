/**
 * The way an edit of a first-match rule list can move access (diff of the `resources:` / `prompts:` rules,
 * items.ts): the two lists aligned by their longest common subsequence of rule fingerprints, and what each
 * rule added or removed outside it can do to the calls that reach it.
 */
import type { PermissionResult } from '../../permissions/result.js';
import type { DiffDirection } from './types.js';

/**
 * Which ways an edit of a first-match list can move access: an added rule that does not deny (or that can
 * fail to judge, which denies), a removed rule that does not allow, a fallback moved. Rules in both lists,
 * in the same relative order, decide alike; the alignment is the longest common subsequence.
 */
export function editDirection(
  oldList: readonly { readonly fingerprint: string; readonly result: PermissionResult; readonly tests: number }[],
  newList: readonly { readonly fingerprint: string; readonly result: PermissionResult; readonly tests: number }[],
  oldFallback: PermissionResult,
  newFallback: PermissionResult,
): DiffDirection | null {
  let start = 0;
  while (
    start < oldList.length &&
    start < newList.length &&
    oldList[start]!.fingerprint === newList[start]!.fingerprint
  )
    start++;
  let endA = oldList.length;
  let endB = newList.length;
  while (endA > start && endB > start && oldList[endA - 1]!.fingerprint === newList[endB - 1]!.fingerprint) {
    endA--;
    endB--;
  }
  const a = oldList.slice(start, endA);
  const b = newList.slice(start, endB);
  const keptA = new Set<number>();
  const keptB = new Set<number>();
  if (a.length * b.length <= 4_000_000) {
    const w = b.length + 1;
    const table = new Uint32Array((a.length + 1) * w);
    for (let i = a.length - 1; i >= 0; i--)
      for (let j = b.length - 1; j >= 0; j--)
        table[i * w + j] =
          a[i]!.fingerprint === b[j]!.fingerprint
            ? table[(i + 1) * w + j + 1]! + 1
            : Math.max(table[(i + 1) * w + j]!, table[i * w + j + 1]!);
    for (let i = 0, j = 0; i < a.length && j < b.length;) {
      if (a[i]!.fingerprint === b[j]!.fingerprint) {
        keptA.add(i++);
        keptB.add(j++);
      } else if (table[(i + 1) * w + j]! >= table[i * w + j + 1]!) i++;
      else j++;
    }
  }
  let widen = false;
  let narrow = false;
  const OPEN: Record<PermissionResult, number> = { deny: 0, ask: 1, allow: 2 };
  if (OPEN[newFallback] > OPEN[oldFallback]) widen = true;
  if (OPEN[newFallback] < OPEN[oldFallback]) narrow = true;
  a.forEach((r, i) => {
    if (keptA.has(i)) return;
    // Its calls now reach later rules or the fallback: anything those decide.
    if (r.result !== 'allow') widen = true;
    if (r.result !== 'deny') narrow = true;
  });
  b.forEach((r, j) => {
    if (keptB.has(j)) return;
    if (r.result !== 'deny') widen = true;
    if (r.result !== 'allow' || r.tests > 0) narrow = true;
  });
  if (!widen && !narrow) return a.length === 0 && b.length === 0 && oldFallback === newFallback ? null : 'other';
  return widen && narrow ? 'other' : widen ? 'widen' : 'narrow';
}
