/**
 * Path arguments as a `path` test reads them: `resolvePath` (the lexical normal form, or why a path cannot
 * be judged safely) and `physicalPath` (its symbolic links resolved on this machine, for `realpath`).
 * matchers.ts compares what these give.
 */
import { realpathSync, readdirSync } from 'node:fs';
import { describe } from '../names.js';

/** The outcome of resolving a path argument. */
export type ResolvedPath =
  | { readonly ok: true; readonly path: string; readonly problem?: never }
  | { readonly ok: false; readonly problem: string; readonly path?: never };

// Control characters (NUL included) end or reshape a path in the tool's hands; percent-escapes and
// backslashes may be decoded or treated as separators after the policy looked at the raw text.
const CONTROL = /\p{Cc}/u;
// Windows drops trailing dots and spaces from a name ("Keys." and "Keys " open "Keys"), so such a segment
// may name another file than it reads as.
const WINDOWS_TRAILING = /[. ]$/;
const PERCENT_ESCAPE = /%[0-9A-Fa-f]{2}/;
// "file:///etc/passwd" or "C:/Windows": the tool may read it as a URL or a drive, not as the relative path it looks like.
const URL_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/**
 * Resolves `.` and `..` in a path argument (POSIX rules), refusing what cannot be judged safely: a value
 * that is not a non-empty string; control characters (NUL); backslashes; percent-escapes; a leading `~`;
 * a leading URL scheme or drive (`file:`, `C:`); a `..` that climbs above the root of an absolute path or
 * above the start of a relative one; a segment ending in a dot or a space (Windows drops them, so
 * `Keys.` opens `Keys`); and text that is not well-formed Unicode. The result is in NFC (upstreams such
 * as the MCP filesystem server, and macOS, open a name by its NFC form).
 *
 * @example
 * resolvePath('/data/../etc/passwd') // { ok: true, path: '/etc/passwd' }
 * resolvePath('/../etc/passwd')      // { ok: false, problem: '... climbs above the root' }
 */
export function resolvePath(value: unknown): ResolvedPath {
  if (typeof value !== 'string') return { ok: false, problem: `a path must be a string, got ${describe(value)}` };
  const quoted = describe(value);
  if (value === '') return { ok: false, problem: 'the path is empty' };
  if (CONTROL.test(value)) return { ok: false, problem: `the path ${quoted} holds a control character (such as NUL)` };
  if (value.includes('\\')) return { ok: false, problem: `the path ${quoted} holds a backslash` };
  if (PERCENT_ESCAPE.test(value)) return { ok: false, problem: `the path ${quoted} holds a percent-escape` };
  if (value.startsWith('~'))
    return { ok: false, problem: `the path ${quoted} starts with ~ (home directories are not resolved)` };
  if (URL_SCHEME.test(value))
    return {
      ok: false,
      problem: `the path ${quoted} starts like a URL or drive (${value.slice(0, value.indexOf(':') + 1)})`,
    };
  if (!value.isWellFormed()) return { ok: false, problem: `the path ${quoted} holds an unpaired surrogate` };
  const absolute = value.startsWith('/');
  const out: string[] = [];
  for (const segment of value.normalize('NFC').split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment !== '..' && WINDOWS_TRAILING.test(segment))
      return {
        ok: false,
        problem: `the path ${quoted} has a segment ending in a dot or a space (${JSON.stringify(segment)}), which Windows reads as another name`,
      };
    if (segment === '..') {
      if (out.length === 0) {
        return {
          ok: false,
          problem: `the path ${quoted} climbs above ${absolute ? 'the root' : 'its starting directory'}`,
        };
      }
      out.pop();
    } else {
      out.push(segment);
    }
  }
  const path = (absolute ? '/' : '') + out.join('/');
  return { ok: true, path: path === '' ? '.' : path };
}

/**
 * Resolves the symbolic links of an absolute path, segment by segment, as the kernel would (`..` climbs
 * out of a link's target). A segment that does not exist is matched to an entry with the same NFC form,
 * as the MCP filesystem server does (more than one such entry cannot be judged); past the first segment
 * that does not exist at all the rest is taken as written (nothing there can be a link yet), unless it
 * holds a `..`. Any other error (a loop, no permission, a file used as a folder) cannot be judged.
 */
export function physicalPath(path: string): ResolvedPath {
  const parts = path.split('/').filter((s) => s !== '' && s !== '.');
  let current = '/';
  const join = (dir: string, name: string): string => (dir === '/' ? `/${name}` : `${dir}/${name}`);
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part === '..') {
      current = current === '/' ? '/' : current.slice(0, current.lastIndexOf('/')) || '/';
      continue;
    }
    try {
      current = realpathSync(join(current, part));
      continue;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return cannotResolve(join(current, part), error);
    }
    let entries: string[];
    try {
      entries = readdirSync(current);
    } catch (error) {
      return cannotResolve(current, error);
    }
    const form = part.normalize('NFC');
    const same = entries.filter((entry) => entry.normalize('NFC') === form);
    if (same.length > 1)
      return {
        ok: false,
        problem: `${JSON.stringify(join(current, part))} names ${same.length} entries that differ only in Unicode normalisation`,
      };
    if (same.length === 1) {
      try {
        current = realpathSync(join(current, same[0]!));
        continue;
      } catch (error) {
        return cannotResolve(join(current, same[0]!), error);
      }
    }
    const rest = parts.slice(i);
    if (rest.includes('..'))
      return {
        ok: false,
        problem: `the path climbs with ".." out of ${JSON.stringify(join(current, part))}, which does not exist`,
      };
    return { ok: true, path: rest.reduce(join, current) };
  }
  return { ok: true, path: current };
}

function cannotResolve(path: string, error: unknown): ResolvedPath {
  const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  return { ok: false, problem: `the links of ${JSON.stringify(path)} cannot be resolved (${code})` };
}
