/**
 * `toolgate pin`: pins the tool definitions of the policy file's upstreams in its lock file, and shows
 * the ones that drifted from their pins (with a diff). `--accept [tool…]` makes the drifted definitions
 * (all, or the named ones) the pinned ones; a running gateway sees it at the next call.
 */
import type { Command } from 'commander';
import { loadPolicy, type Cli } from './context.js';
import { EXIT, exitCodes, USAGE_LINE } from './exit-codes.js';

export function registerPin(program: Command, cli: Cli): void {
  const command = program
    .command('pin')
    .description(
      "Pin the upstreams' tool definitions in the lock file beside the policy; show drifted ones with a diff; --accept re-approves them.",
    )
    .requiredOption('-p, --policy <file>', 'the policy file with a gateway: section')
    .option('--accept [tools...]', 'accept the drifted definitions (all, or these tools) as the pinned ones')
    .option('--json', 'print JSON');
  exitCodes(command, [
    [EXIT.OK, 'every tool matches its pin (or the drift was accepted)'],
    [
      EXIT.POLICY,
      'the policy file was refused, a tool drifted from its pin, an upstream could not be reached, or a tool was left unpinned (its upstream holds PINS_PER_UPSTREAM_MAX pins)',
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
      const accepted = store.accept(options.accept === true ? [] : options.accept);
      const left = Object.keys(store.lock.drift ?? {});
      if (options.json) cli.out(JSON.stringify({ lock: store.file, accepted, drift: left }));
      else {
        cli.out(accepted.length === 0 ? 'nothing to accept' : `accepted: ${accepted.join(', ')}`);
        if (left.length > 0) cli.out(`still drifted: ${left.join(', ')}`);
      }
      cli.exit(left.length > 0 ? EXIT.POLICY : EXIT.OK);
      return;
    }
    // Connecting pins what is new and records what drifted (the gateway does this at every start).
    const { createGateway } = await import('../gateway/gateway.js');
    const pinned: string[] = [];
    const drifted: { tool: string; diff: string }[] = [];
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
        else drifted.push({ tool: record.tool, diff: record.diff ?? '' });
      },
    });
    const down = [...gateway.upstreams.values()]
      .filter((u) => u.state !== 'ready')
      .map((u) => ({ upstream: u.namespace, reason: u.reason }));
    await gateway.close();
    if (options.json) cli.out(JSON.stringify({ lock: store.file, pinned, drift: drifted, unpinned, down }));
    else {
      cli.out(
        `${store.file}: ${Object.keys(store.lock.tools).length} tools pinned${pinned.length ? `, ${pinned.length} new: ${pinned.join(', ')}` : ''}`,
      );
      for (const d of down) cli.err(`upstream ${d.upstream} could not be reached: ${d.reason}`);
      for (const d of drifted) cli.out(`${cli.c.red('drift')} ${d.tool}\n${d.diff}`);
      if (drifted.length > 0) cli.out('run `toolgate pin --accept` to re-approve them');
      if (unpinned.length > 0) {
        cli.out(`${cli.c.red('unpinned')} ${unpinned.map((u) => u.tool).join(', ')}`);
        // Why, once an upstream: its bound, the lock file and how to make room.
        const why = new Map(unpinned.map((u) => [u.upstream, u.reason] as const));
        for (const reason of why.values()) cli.out(reason);
      }
    }
    cli.exit(drifted.length > 0 || down.length > 0 || unpinned.length > 0 ? EXIT.POLICY : EXIT.OK);
  });
}
