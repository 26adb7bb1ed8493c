/**
 * The exit codes of every `toolgate` command, in one place. A command lists the codes it can end with
 * (`exitCodes(command, [...])`), so its `--help` and docs/cli.md show the same list, and a new command
 * reuses the meanings instead of inventing numbers.
 */
import type { Command } from 'commander';

/** The conventions: the same number means the same kind of outcome in every command. */
export const EXIT = {
  /** Success: the command did what was asked and found nothing to fail on. */
  OK: 0,
  /** The policy file was refused, or the command found what it was asked to fail on (lint errors). */
  POLICY: 1,
  /** Usage error: a bad option or argument, an unreadable input file, an unknown agent or tenant. */
  USAGE: 2,
  /** A decided call was denied (explain; check with --fail-on deny). */
  DENIED: 3,
  /** A decided call needs a person's approval (explain; check with --fail-on ask). */
  ASK: 4,
} as const;

/** One line of a command's exit-code list: the code and what it means for that command. */
export type ExitCodeLine = readonly [code: number, meaning: string];

/** The usage error line, worded once for every command. */
export const USAGE_LINE: ExitCodeLine = [
  EXIT.USAGE,
  'usage error: a bad option or argument, an unreadable input file, an unknown agent or tenant',
];

/** The text block `--help` shows after the options. */
export function exitCodesText(lines: readonly ExitCodeLine[]): string {
  return `\nExit codes:\n${lines.map(([code, meaning]) => `  ${code}  ${meaning}`).join('\n')}`;
}

/** Adds the exit-code list to a command's `--help`. */
export function exitCodes(command: Command, lines: readonly ExitCodeLine[]): Command {
  return command.addHelpText('after', exitCodesText(lines));
}
