import { z } from 'zod';
import { defineTool, ToolRegistry, ToolTag, type RegistryEvent, type Tool } from '../../src/index.js';
import { type ToolMetadataInput } from '../../src/types.js';

/** A registry with a few tools whose executions are recorded in `ran`. */
export function fixture(options: { handlerTimeoutMs?: number; toolTimeoutMs?: number } = {}) {
  const ran: { tool: string; args: Record<string, unknown> }[] = [];
  const events: RegistryEvent[] = [];
  const registry = new ToolRegistry(options);
  registry.onChange((e) => events.push(e));
  const add = (
    name: string,
    metadata: ToolMetadataInput = {},
    run?: (args: Record<string, unknown>) => unknown,
  ): Tool =>
    registry.register(
      defineTool({
        name,
        description: `the ${name} tool`,
        parameters: { type: 'object', additionalProperties: true },
        metadata,
        execute: (args) => {
          ran.push({ tool: name, args });
          return run ? run(args) : `${name} ok`;
        },
      }),
    );
  registry.register(
    defineTool({
      name: 'search',
      description: 'Search',
      parameters: z.object({ query: z.string().trim().min(1) }),
      metadata: { tags: [ToolTag.READ_ONLY] },
      execute: (args) => {
        ran.push({ tool: 'search', args });
        return { hits: [args.query] };
      },
    }),
  );
  add('refund', { tags: [ToolTag.DESTRUCTIVE] });
  add('sudo', { tags: [ToolTag.PRIVILEGED] });
  add('fetch_url', { tags: [ToolTag.NETWORK] });
  return { registry, ran, events, add };
}
