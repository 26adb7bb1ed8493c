/** Shared fixtures for the runner tests: a registry of real tools (zod and JSON Schema) with execution counters. */
import { z } from 'zod';
import {
  ALLOW_READONLY,
  defineTool,
  PermissionPolicy,
  PermissionResult,
  ToolRegistry,
  ToolTag,
  type PermissionRule,
} from '../../src/index.js';

export interface Shop {
  readonly registry: ToolRegistry;
  /** How many times each tool actually executed, by name. */
  readonly executed: Record<string, number>;
  /** The arguments of every refund that executed. */
  readonly refunds: { order: string; amount: number }[];
}

export const ASK_BIG_REFUNDS: PermissionRule = {
  name: 'ask_big_refunds',
  tools: ['refund'],
  match: (_tool, params) => Number(params['amount']) > 100,
  result: PermissionResult.ASK,
  reason: 'refunds over 100 need a human',
};

export const DENY_HUGE_REFUNDS: PermissionRule = {
  name: 'deny_huge_refunds',
  tools: ['refund'],
  match: (_tool, params) => Number(params['amount']) > 1000,
  result: PermissionResult.DENY,
  reason: 'refunds over 1000 are never made by an agent',
};

export function shop(options: { policyVersion?: string; handlerTimeoutMs?: number } = {}): Shop {
  const executed: Record<string, number> = {};
  const refunds: { order: string; amount: number }[] = [];
  const count = (name: string): void => {
    executed[name] = (executed[name] ?? 0) + 1;
  };
  const registry = new ToolRegistry({ handlerTimeoutMs: options.handlerTimeoutMs ?? 500 });
  registry.register(
    defineTool({
      name: 'search',
      description: 'Search the catalogue',
      parameters: z.object({ query: z.string() }),
      metadata: { tags: [ToolTag.READ_ONLY] },
      execute: ({ query }) => {
        count('search');
        return `3 results for ${query}`;
      },
    }),
  );
  registry.register(
    defineTool({
      name: 'refund',
      description: 'Refund an order',
      parameters: z.object({ order: z.string(), amount: z.number().positive() }),
      metadata: { tags: [ToolTag.DESTRUCTIVE] },
      execute: ({ order, amount }) => {
        count('refund');
        refunds.push({ order, amount });
        return `refunded ${amount} on ${order}`;
      },
    }),
  );
  registry.register({
    name: 'quote',
    description: 'Price an item',
    parameters: {
      type: 'object',
      properties: { item: { type: 'string' } },
      required: ['item'],
      additionalProperties: false,
    },
    metadata: { tags: [ToolTag.READ_ONLY] },
    execute: (args) => {
      count('quote');
      return { item: args['item'], price: 42 };
    },
  });
  registry.register({
    name: 'discount',
    description: 'Apply a discount',
    parameters: { type: 'object', properties: { percent: { type: 'number' } }, required: ['percent'] },
    execute: (args) => {
      count('discount');
      return `discount ${String(args['percent'])}% applied`;
    },
  });
  registry.register({
    name: 'ledger',
    description: 'Read the ledger',
    parameters: { type: 'object', properties: {} },
    metadata: { tags: [ToolTag.READ_ONLY] },
    execute: () => {
      count('ledger');
      return 'ledger: balanced';
    },
  });
  registry.setPermissionPolicy(
    new PermissionPolicy({
      rules: [ALLOW_READONLY, DENY_HUGE_REFUNDS, ASK_BIG_REFUNDS],
      fallback: PermissionResult.ALLOW,
      ...(options.policyVersion ? { version: options.policyVersion } : {}),
    }),
  );
  return { registry, executed, refunds };
}

export const SECRET = 'test-secret-with-enough-bytes-0123456789';
