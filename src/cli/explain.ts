/** `toolgate explain`: decide one call and show why. */
import { Option, type Command } from 'commander';
import { readCall, type ToolCallInput } from '../formats/index.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import type { ToolRegistry } from '../registry.js';
import type { JsonSchema } from '../schema.js';
import { canonical, describe } from '../names.js';
import { explainCall } from '../policy-file/explain.js';
import {
  contextOptions,
  loadPolicy,
  parseJson,
  UsageError,
  warnConfusables,
  who,
  type Cli,
  type ContextOptions,
} from './context.js';
import { EXIT, exitCodes, USAGE_LINE } from './exit-codes.js';
import { acceptWords, explainText, shellWord, terminalSafe, terminalSafeLines } from './render.js';

/** A drifted pin of the called tool, as `toolgate explain` shows it. */
interface PinnedDrift {
  readonly tool: string;
  readonly lock: string;
  readonly onDrift: 'refuse' | 'ask';
  readonly diff: string;
  /** The drifted definition's, the one `diff` shows: what `toolgate pin --accept tool=<sha256>` names. */
  readonly sha256: string;
}

/**
 * For a policy file with a `gateway:` section: the upstream tools its lock file knows join the registry
 * as stubs with their pinned definitions (so a call to `docs:echo` is decided as at the gateway, not as an
 * unknown tool), and the called tool's drift, where the gateway and `toolgate pin` record the definition
 * an upstream last offered when it differs from the pinned one. A drifted tool is decided under the pin
 * rule, with the schema it is offered with now.
 */
async function gatewayTools(set: PolicySet, name: string, registry: ToolRegistry): Promise<PinnedDrift | null> {
  const { pinOptionsOf } = await import('../gateway/config.js');
  const { readLockFile, definitionDiff } = await import('../gateway/pins.js');
  const { withPinRule } = await import('../gateway/pin-rule.js');
  const pins = pinOptionsOf(set);
  if (!pins) return null;
  const lock = readLockFile(pins.file);
  for (const [tool, entry] of Object.entries(lock.tools)) {
    if (registry.has(tool)) continue;
    const definition = lock.drift?.[tool]?.definition ?? entry.definition;
    registry.register({
      name: tool,
      ...(definition.description !== undefined ? { description: definition.description } : {}),
      parameters: (definition.inputSchema ?? { type: 'object' }) as JsonSchema,
      execute: () => {
        throw new Error('toolgate explain never runs a tool');
      },
    });
  }
  const form = canonical(name);
  const tool = Object.keys(lock.drift ?? {}).find((key) => canonical(key) === form && lock.tools[key]);
  if (tool === undefined) return null;
  const onDrift = pins.onDrift ?? 'refuse';
  registry.setPermissionPolicy(withPinRule(set.policy, (t) => t.canonicalName === form, onDrift));
  const offered = lock.drift![tool]!;
  const diff = definitionDiff(tool, lock.tools[tool]!.definition, offered.definition);
  return { tool, lock: pins.file, onDrift, diff, sha256: offered.sha256 };
}

type ExplainOptions = ContextOptions & { call?: string; redis?: string; redisPrefix?: string };

/** The deployment's counters (the driver is loaded only with --redis). */
async function openRedis(url: string, prefix = 'toolgate') {
  const { RedisStores } = await import('../stores/redis.js');
  try {
    return new RedisStores({ url, prefix });
  } catch (error) {
    throw new UsageError(`--redis: ${(error as Error).message}`);
  }
}

export function registerExplain(program: Command, cli: Cli): void {
  const command = contextOptions(
    program
      .command('explain')
      .description(
        'Decide one call and show why: the canonical name, each allowlist layer, each rule tried (and each condition), the handler.',
      )
      .argument('[tool]', 'the tool name, as the model would send it')
      .argument('[args]', 'the arguments as JSON (default: {})')
      .addOption(new Option('--redis <url>', "read the limits' live counters from Redis (redis://…)"))
      .addOption(new Option('--redis-prefix <prefix>', 'the Redis key prefix of the deployment').default('toolgate'))
      .addOption(
        new Option(
          '--call <json>',
          'a whole call in any supported shape (OpenAI, Anthropic, Gemini, toolgate) instead of TOOL and ARGS',
        ),
      ),
  ).addHelpText(
    'after',
    `\nExample:\n  toolgate explain --policy policy.yaml --agent concierge --tenant acme --scopes files:read read_file '{"path":"/data/../etc/passwd"}'\n\nWith a gateway: section, a tool whose definition drifted from its pin in the lock file (as the gateway or\n\`toolgate pin\` last saw it) is decided as the gateway does (gateway.pin: refuse or ask), with the diff.`,
  );
  exitCodes(command, [
    [EXIT.OK, 'the call is allowed'],
    [EXIT.POLICY, 'the policy file was refused'],
    USAGE_LINE,
    [EXIT.DENIED, 'the call is denied'],
    [EXIT.ASK, 'the call needs approval (a rule answers ask)'],
  ]).action(async (tool: string | undefined, args: string | undefined, options: ExplainOptions) => {
    if ((tool === undefined) === (options.call === undefined))
      throw new UsageError('give either TOOL [ARGS] or --call JSON');
    const set = await loadPolicy(cli, options.policy, options.json);
    if (!set) return;
    let call: ToolCallInput;
    if (options.call !== undefined) call = parseJson(options.call, '--call') as ToolCallInput;
    else call = { name: tool!, arguments: args === undefined ? {} : argumentsObject(args) };
    warnConfusables(cli, set);
    const registry = set.registry({ confusables: 'off' });
    const drift = set.data.gateway ? await gatewayTools(set, readCall(call).name, registry) : null;
    const redis = options.redis === undefined ? null : await openRedis(options.redis, options.redisPrefix);
    let explanation;
    try {
      if (redis) registry.setLimiter(set.limiter(redis.counters));
      explanation = await explainCall(set, call, who(options), registry);
    } finally {
      await redis?.close();
    }
    if (options.json) cli.out(JSON.stringify(drift ? { ...explanation, drift } : explanation));
    else {
      // The tool's name, its arguments and an upstream's definition are not the operator's: escaped for the terminal.
      cli.out(explainText(terminalSafe(explanation), cli.c));
      if (drift) {
        const tool = terminalSafe(drift.tool);
        cli.out(
          `${cli.c.bold('drift')}      ${tool}: the definition the upstream offered last (recorded in ${terminalSafe(drift.lock)}) differs from its pin; gateway.pin is ${drift.onDrift}, so the gateway ${drift.onDrift === 'refuse' ? 'refuses the call' : 'asks a person'}. \`toolgate pin --policy ${shellWord(options.policy)} ${acceptWords([[drift.tool, drift.sha256]])}\` accepts this definition.\n${terminalSafeLines(drift.diff.trimEnd())}`,
        );
      }
    }
    const effect = explanation.decision.effect;
    cli.exit(effect === 'allow' ? EXIT.OK : effect === 'deny' ? EXIT.DENIED : EXIT.ASK);
  });
}

/**
 * ARGS, parsed once: a JSON object (the call's arguments), else a usage error saying what it is. The
 * parsed object goes to the gate as a value, so a string inside it is never read as JSON a second time.
 */
function argumentsObject(text: string): Record<string, unknown> {
  const value = parseJson(text, 'ARGS');
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError(
      `ARGS is valid JSON but not an object: got ${describe(value)}; the call's arguments are a JSON object`,
    );
  return value as Record<string, unknown>;
}
