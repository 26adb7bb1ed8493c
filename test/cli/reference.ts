// Reads `--help` texts and docs/cli.md into comparable pieces, and lists what one says that the other
// does not. Generic over whatever commands `toolgate --help` lists.

/** The lines of a help section (`Options:`, `Commands:`, `Exit codes:`) up to the next blank line. */
function helpSection(help: string, title: string): string[] {
  const lines = help.split('\n');
  const start = lines.indexOf(title);
  if (start < 0) return [];
  const out: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.trim() === '') break;
    out.push(line);
  }
  return out;
}

/** The command names `toolgate --help` lists (commander's own `help` command left out). */
export function helpCommands(help: string): string[] {
  return helpSection(help, 'Commands:')
    .map((l) => /^ {2}(\S+)/.exec(l)?.[1])
    .filter((c): c is string => c !== undefined && c !== 'help');
}

/** The flags of each option, as help prints them: `-p, --policy <file>`. */
export function helpOptions(help: string): string[] {
  return helpSection(help, 'Options:')
    .map((l) => /^ {2}(-\S*(?: \S+)*?)(?: {2,}|$)/.exec(l)?.[1])
    .filter((o): o is string => o !== undefined);
}

/** `code  meaning` lines of the exit-code list. */
export function helpExitCodes(help: string): string[] {
  return helpSection(help, 'Exit codes:')
    .map((l) => /^ {2}(\d+) {2}(.+)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => `${m[1]}  ${m[2]}`);
}

/** The part of the page from `## toolgate <command>` to the next `## `, or null. */
export function docsSection(docs: string, command: string): string | null {
  const head = `\n## toolgate ${command}\n`;
  const start = docs.indexOf(head);
  if (start < 0) return null;
  const end = docs.indexOf('\n## ', start + head.length);
  return docs.slice(start, end < 0 ? undefined : end);
}

function subsection(section: string, title: string): string {
  const start = section.indexOf(`\n### ${title}\n`);
  if (start < 0) return '';
  const end = section.indexOf('\n### ', start + title.length + 6);
  return section.slice(start, end < 0 ? undefined : end);
}

/** The flags in the first column of the section's options table. */
export function docsOptions(section: string): string[] {
  return [...subsection(section, 'Options').matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!);
}

/** `code  meaning` of the section's exit-code table. */
export function docsExitCodes(section: string): string[] {
  return [...subsection(section, 'Exit codes').matchAll(/^\| (\d+) \| (.+?) \|$/gm)].map((m) => `${m[1]}  ${m[2]}`);
}

/** What the page lacks or has too much, for one command's help text. Empty when they agree. */
export function compareCommand(command: string, help: string, docs: string): string[] {
  const section = docsSection(docs, command);
  if (section === null) return [`docs/cli.md has no "## toolgate ${command}" section`];
  const problems: string[] = [];
  const documented = docsOptions(section);
  const offered = helpOptions(help);
  for (const o of offered)
    if (!documented.includes(o)) problems.push(`${command}: option \`${o}\` is in --help but not in docs/cli.md`);
  for (const o of documented)
    if (!offered.includes(o)) problems.push(`${command}: option \`${o}\` is in docs/cli.md but not in --help`);
  const codes = helpExitCodes(help);
  if (codes.length === 0) problems.push(`${command}: --help lists no exit codes`);
  const written = docsExitCodes(section);
  for (const c of codes)
    if (!written.includes(c)) problems.push(`${command}: exit code "${c}" is in --help but not in docs/cli.md`);
  for (const c of written)
    if (!codes.includes(c)) problems.push(`${command}: exit code "${c}" is in docs/cli.md but not in --help`);
  return problems;
}
