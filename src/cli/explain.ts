/** `toolgate explain`: decide one call and show why. */
import { Option, type Command } from 'commander';
import type { ToolCallInput } from '../formats/index.js';
import { describe } from '../names.js';
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
import { explainText } from './render.js';

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
    `\nExample:\n  toolgate explain --policy policy.yaml --agent concierge --tenant acme --scopes files:read read_file '{"path":"/data/../etc/passwd"}'`,
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
    const redis = options.redis === undefined ? null : await openRedis(options.redis, options.redisPrefix);
    let explanation;
    try {
      if (redis) registry.setLimiter(set.limiter(redis.counters));
      explanation = await explainCall(set, call, who(options), registry);
    } finally {
      await redis?.close();
    }
    cli.out(options.json ? JSON.stringify(explanation) : explainText(explanation, cli.c));
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
