/**
 * A search box (search.ts) read back: its region in words and the arguments of its witness.
 */
import type { Box } from './search.js';
import type { NameLiteral, TagLiteral, VarLiteral } from './values.js';

/** The region of a box, in words: the literals that define it. */
export function whereText(box: Box): string {
  const parts: string[] = [];
  for (const [key, lits] of box.lits) {
    for (const lit of lits) {
      if (key === '#tags') {
        const l = lit as TagLiteral;
        parts.push(
          l.allowed === 'T'
            ? `the tool carries ${l.any.length > 1 ? 'one of the tags' : 'the tag'} ${l.any.join(', ')}`
            : `the tool carries none of the tags ${l.any.join(', ')}`,
        );
        continue;
      }
      const l = lit as VarLiteral | NameLiteral;
      const text = l.tests.map((t) => t.text).join(' and ');
      const subject = key === '#name' ? "the tool's name" : key.slice(4);
      const allowed = [...l.allowed];
      if (allowed.length === 1 && allowed[0] === 'T') parts.push(`${subject} ${text}`);
      else if (allowed.length === 1 && allowed[0] === 'F')
        parts.push(l.tests.length === 1 ? `${subject}: not ${text}` : `${subject}: not (${text})`);
      else if (allowed.length === 1 && allowed[0] === 'U') parts.push(`${subject} cannot be judged by "${text}"`);
    }
  }
  return parts.length === 0 ? 'every call' : parts.join('; ');
}

export function argumentsOf(box: Box): { args: Record<string, unknown>; ok: boolean } {
  const entries = [...box.answers].filter(([k]) => k.startsWith('arg:')).sort((a, b) => a[0].length - b[0].length);
  const args: Record<string, unknown> = {};
  let ok = true;
  for (const [key, answer] of entries) {
    if (answer.status !== 'sat' || !('present' in answer) || !answer.present) continue;
    const path = key.slice(4).split('.');
    let at: Record<string, unknown> = args;
    for (const part of path.slice(0, -1)) {
      const next = at[part];
      if (next === undefined) at = at[part] = {};
      else if (typeof next === 'object' && next !== null && !Array.isArray(next)) {
        at = at[part] = { ...(next as Record<string, unknown>) };
      } else {
        ok = false;
        break;
      }
    }
    at[path[path.length - 1]!] = answer.value;
  }
  return { args, ok };
}
