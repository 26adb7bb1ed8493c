/**
 * `toolgate pin`: pins the tool definitions of the policy file's upstreams in its lock file, and shows
 * the ones that drifted from their pins (with a diff and the sha256 of the definition offered). `--accept
 * [tool…]` makes the drifted definitions (all, or the named ones) the pinned ones; a running gateway sees it
 * at the next call. `--accept tool=<sha256>` accepts a tool only while its recorded drift is the definition of
 * that hash, the one reviewed: a gateway shown another definition since rewrote the drift (atk-pinlock).
 */
import type { Command } from 'commander';
import { canonical } from '../names.js';
import { loadPolicy, UsageError, type Cli } from './context.js';
import { EXIT, exitCodes, USAGE_LINE } from './exit-codes.js';
import { acceptWords, shellWord, terminalSafe, terminalSafeLines } from './render.js';

/** The hex digits of a drift's sha256 the text listing shows (the whole hash is in --json and in the accept hint). */
const SHORT_HASH = 12;

/**
 * The `--accept` arguments: tool names, each alone (whatever drift is recorded when it runs) or bound as
 * `name=<sha256>` (split at the last `=`); a bound one's hash is the whole 64 hex digits — a prefix is refused, since
 * an upstream that chose definition A can search for a B whose hash begins alike (48 bits: hours on one GPU).
 */
function acceptArguments(args: readonly string[]): { names: string[]; reviewed: Map<string, string> } {
  const names: string[] = [];
  const reviewed = new Map<string, string>();
  for (const arg of args) {
    const at = arg.lastIndexOf('=');
    if (at < 0) {
      names.push(arg);
      continue;
    }
    const name = arg.slice(0, at);
    const sha256 = arg.slice(at + 1).toLowerCase();
    const form = canonical(name);
    if (name === '' || !/^[0-9a-f]{64}$/.test(sha256) || (reviewed.get(form) ?? sha256) !== sha256)
      throw new UsageError(
        `--accept ${JSON.stringify(terminalSafe(arg))}: name a tool once, with the whole sha256 (64 hex digits) of the drifted definition \`toolgate pin\` showed: tool=<sha256>`,
      );
    names.push(name);
    reviewed.set(form, sha256);
  }
  return { names, reviewed };
}

export function registerPin(program: Command, cli: Cli): void {
  const command = program
    .command('pin')
    .description(
      "Pin the upstreams' tool definitions in the lock file beside the policy; show drifted ones with a diff; --accept re-approves them.",
    )
    .requiredOption('-p, --policy <file>', 'the policy file with a gateway: section')
    .option(
      '--accept [tools...]',
      'accept the drifted definitions (all, or these tools) as the pinned ones; tool=<sha256> accepts a tool only while its drift is that reviewed definition',
    )
    .option('--json', 'print JSON');
  exitCodes(command, [
    [EXIT.OK, 'every tool matches its pin (or the drift was accepted)'],
    [
      EXIT.POLICY,
      'the policy file was refused, a tool drifted from its pin, an upstream could not be reached, a tool was left unpinned (its upstream holds PINS_PER_UPSTREAM_MAX pins), or a tool=<sha256> was not accepted (its recorded drift is another definition, or none)',
    ],
    USAGE_LINE,
  ]).action(async (options: { policy: string; accept?: true | string[]; json?: boolean }) => {
    const set = await loadPolicy(cli, options.policy, options.json);
    if (!set) return;
    const { gatewayConfigOf } = await import('../gateway/config.js');
    const { PinStore } = await import('../gateway/pins.js');
    const config = gatewayConfigOf(set);
    if (!config.pins) throw new Error('pinning is off in this policy file (gateway.pin: off)');
    const store = new PinStore(config.pins.file);
    if (options.accept !== undefined) {
      const { names, reviewed } = acceptArguments(options.accept === true ? [] : options.accept);
      // refused: a bound tool not accepted, its drift another definition or none, as the accept's own read saw it.
      const { accepted, refused } = store.accept(names, reviewed);
      const left = Object.keys(store.lock.drift ?? {});
      if (options.json) cli.out(JSON.stringify({ lock: store.file, accepted, refused, drift: left }));
      else {
        cli.out(accepted.length === 0 ? 'nothing to accept' : `accepted: ${terminalSafe(accepted).join(', ')}`);
        const again = `run \`toolgate pin --policy ${shellWord(options.policy)}\` to review it again`;
        for (const r of refused)
          cli.err(
            `${cli.c.red('not accepted')} ${terminalSafe(r.tool)}: ${r.recorded === null ? 'no drifted definition of it is recorded now' : `its drifted definition is now sha256 ${r.recorded}, not the ${r.sha256} named`}; ${again}`,
          );
        if (left.length > 0) cli.out(`still drifted: ${terminalSafe(left).join(', ')}`);
      }
      cli.exit(left.length > 0 || refused.length > 0 ? EXIT.POLICY : EXIT.OK);
      return;
    }
    // Connecting pins what is new and records what drifted (the gateway does this at every start).
    const { createGateway } = await import('../gateway/gateway.js');
    const pinned: string[] = [];
    // sha256: the definition whose diff is shown (the audit record's), none when the lock file could not be read.
    const drifted: { tool: string; diff: string; sha256?: string }[] = [];
    // Left unpinned: its upstream holds PINS_PER_UPSTREAM_MAX pins (the gateway refuses its calls).
    const unpinned: { tool: string; upstream: string; reason: string }[] = [];
    const gateway = await createGateway({
      policy: set,
      upstreams: config.upstreams,
      pins: config.pins,
      audit: (record) => {
        if (record.type !== 'pin') return;
        if (record.event === 'pinned') pinned.push(record.tool);
        else if (record.event === 'unpinned')
          unpinned.push({ tool: record.tool, upstream: record.upstream, reason: record.reason ?? '' });
        else
          drifted.push({ tool: record.tool, diff: record.diff ?? '', ...(record.sha256 && { sha256: record.sha256 }) });
      },
    });
    const down = [...gateway.upstreams.values()]
      .filter((u) => u.state !== 'ready')
      .map((u) => ({ upstream: u.namespace, reason: u.reason }));
    await gateway.close();
    if (options.json) cli.out(JSON.stringify({ lock: store.file, pinned, drift: drifted, unpinned, down }));
    else {
      cli.out(
        `${terminalSafe(store.file)}: ${Object.keys(store.lock.tools).length} tools pinned${pinned.length ? `, ${pinned.length} new: ${terminalSafe(pinned).join(', ')}` : ''}`,
      );
      for (const d of down)
        cli.err(`upstream ${terminalSafe(d.upstream)} could not be reached: ${terminalSafeLines(d.reason ?? '')}`);
      for (const d of drifted)
        cli.out(
          `${cli.c.red('drift')} ${terminalSafe(d.tool)}${d.sha256 ? ` sha256:${d.sha256.slice(0, SHORT_HASH)}` : ''}\n${terminalSafeLines(d.diff)}`,
        );
      // The bound form: it accepts the definitions shown here and no other (`--accept <tool>` alone accepts whatever
      // drift is recorded when it runs, which a running gateway may have rewritten since); a tool's last one shown.
      const last = new Map(drifted.flatMap((d) => (d.sha256 ? [[d.tool, d.sha256] as const] : [])));
      if (last.size > 0)
        cli.out(
          `run \`toolgate pin --policy ${shellWord(options.policy)} ${acceptWords(last)}\` to accept the definitions shown`,
        );
      if (unpinned.length > 0) {
        cli.out(`${cli.c.red('unpinned')} ${unpinned.map((u) => terminalSafe(u.tool)).join(', ')}`);
        // Why, once an upstream: its bound, the lock file and how to make room.
        const why = new Map(unpinned.map((u) => [u.upstream, u.reason] as const));
        for (const reason of why.values()) cli.out(terminalSafeLines(reason));
      }
    }
    cli.exit(drifted.length > 0 || down.length > 0 || unpinned.length > 0 ? EXIT.POLICY : EXIT.OK);
  });
}
