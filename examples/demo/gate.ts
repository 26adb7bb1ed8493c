/**
 * The core gate on one multi-tenant scenario: two tenants on different plans, callers with different
 * scopes, one agent, and a policy with a rule that denies, a rule that asks, and a human who answers.
 */
import stringWidth from 'string-width';
import { z } from 'zod';
import {
  ALLOW_READONLY,
  defineTool,
  DENY_PRIVILEGED,
  PermissionPolicy,
  ToolRegistry,
  ToolTag,
  type Decision,
  type GateContext,
} from '../../src/index.js';

export async function gateDemo(print: (line: string) => void): Promise<void> {
  const registry = new ToolRegistry();
  registry.register(
    defineTool({
      name: 'search_orders',
      description: 'Find orders',
      parameters: z.object({ query: z.string() }),
      metadata: { tags: [ToolTag.READ_ONLY] },
      execute: ({ query }) => `3 orders match "${query}"`,
    }),
  );
  registry.register(
    defineTool({
      name: 'refund',
      description: 'Refund an order',
      parameters: z.object({ order: z.string(), amount: z.number().positive() }),
      metadata: { tags: [ToolTag.DESTRUCTIVE] },
      execute: ({ order, amount }) => `refunded ${amount} on ${order}`,
    }),
  );
  registry.register(
    defineTool({
      name: 'export_customers',
      description: 'Export all customers',
      parameters: z.object({}),
      metadata: { tags: [ToolTag.READ_ONLY], customTags: ['bulk_pii'] },
      execute: () => 'exported',
    }),
  );
  registry.register(
    defineTool({
      name: 'delete_account',
      description: 'Delete an account',
      parameters: z.object({ account: z.string() }),
      metadata: { tags: [ToolTag.PRIVILEGED, ToolTag.DESTRUCTIVE] },
      execute: () => 'deleted',
    }),
  );

  registry.setPermissionPolicy(
    new PermissionPolicy({
      rules: [
        DENY_PRIVILEGED,
        {
          name: 'deny_bulk_pii',
          tags: ['bulk_pii'],
          result: 'deny',
          reason: 'Bulk export of personal data is off for agents',
        },
        ALLOW_READONLY,
        {
          name: 'small_refunds',
          tools: ['refund'],
          match: (_t, p) => Number(p['amount']) <= 50,
          result: 'allow',
          reason: 'Refunds up to 50 need no approval',
        },
        { name: 'ask_refunds', tools: ['refund'], result: 'ask', reason: 'Refunds over 50 need a human' },
      ],
      fallback: 'deny',
    }),
  );
  // The approver: a human stand-in that approves refunds up to 200.
  registry.setPermissionHandler(async (request) => (Number(request.parameters['amount']) <= 200 ? 'allow' : 'deny'));

  const agent = { name: 'concierge', tools: ['search_orders', 'refund', 'export_customers', 'delete_account'] };
  const tenants = {
    acme: { id: 'acme', tools: ['search_orders', 'refund', 'export_customers', 'delete_account'] }, // pro plan
    globex: { id: 'globex', tools: ['search_orders'] }, // basic plan: no refunds
  };
  const support = { id: 'support-lead', scopes: ['search_orders', 'refund', 'export_customers', 'delete_account'] };
  const viewer = { id: 'viewer', scopes: ['search_orders'] };

  const calls: [string, GateContext, string, unknown][] = [
    ['acme / support', { agent, tenant: tenants.acme, caller: support }, 'search_orders', { query: 'late' }],
    ['acme / support', { agent, tenant: tenants.acme, caller: support }, 'ＲＥＦＵＮＤ', { order: 'A-17', amount: 20 }],
    ['acme / support', { agent, tenant: tenants.acme, caller: support }, 'refund', { order: 'A-18', amount: 120 }],
    ['acme / support', { agent, tenant: tenants.acme, caller: support }, 'refund', { order: 'A-19', amount: 900 }],
    ['acme / support', { agent, tenant: tenants.acme, caller: support }, 'delete_account', { account: 'u-1' }],
    ['acme / support', { agent, tenant: tenants.acme, caller: support }, 'export_customers', {}],
    ['acme / support', { agent, tenant: tenants.acme, caller: support }, 'wire_money', { to: 'x' }],
    ['acme / viewer', { agent, tenant: tenants.acme, caller: viewer }, 'refund', { order: 'A-20', amount: 5 }],
    [
      'globex / support',
      { agent: { name: 'concierge', tools: ['search_orders', 'refund'] }, tenant: tenants.globex, caller: support },
      'refund',
      { order: 'G-1', amount: 5 },
    ],
    ['globex / support', { agent, tenant: tenants.globex, caller: support }, 'search_orders', '{"query": '],
  ];

  const rows: string[][] = [['#', 'tenant / caller', 'call', 'decision', 'by', 'why']];
  let i = 0;
  for (const [who, context, tool, args] of calls) {
    const result = await registry.invoke(tool, args, context);
    rows.push([
      String(++i),
      who,
      `${tool} ${typeof args === 'string' ? args : JSON.stringify(args)}`,
      verdict(result.decision),
      by(result.decision),
      result.decision.reason,
    ]);
  }
  print('toolgate: one gate for every tool call (agent "concierge", two tenants, two callers)\n');
  print(table(rows));
}

function verdict(d: Decision): string {
  if (d.effect === 'allow') return d.by === 'handler' ? 'ALLOW (approved)' : 'ALLOW';
  return d.asked ? 'DENY (approver said no)' : d.stage === 'allowlist' || d.stage === 'lookup' ? 'REFUSED' : 'DENY';
}

function by(d: Decision): string {
  if (d.effect === 'deny' && (d.stage === 'allowlist' || d.stage === 'lookup')) return `layer: ${d.layer}`;
  if (d.rule) return `rule: ${d.rule}`;
  return d.stage;
}

/**
 * A plain-text table, aligned by display width (a full-width "ＲＥＦＵＮＤ" takes two columns a letter);
 * wide cells are cut so each row stays on one line.
 */
export function table(rows: string[][]): string {
  const cut = rows.map((row) => row.map((cell, c) => (c === row.length - 1 ? cutTo(cell, 70) : cell)));
  const widths = cut[0]!.map((_, c) => Math.max(...cut.map((row) => stringWidth(row[c]!))));
  const line = (row: string[]) =>
    row
      .map((cell, c) => cell + ' '.repeat(widths[c]! - stringWidth(cell)))
      .join('  ')
      .trimEnd();
  return [line(cut[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cut.slice(1).map(line)].join('\n');
}

/** `text` cut to at most `width` columns, ending in "..." when cut (whole characters only). */
function cutTo(text: string, width: number): string {
  if (stringWidth(text) <= width) return text;
  let out = '';
  for (const { segment } of new Intl.Segmenter().segment(text)) {
    if (stringWidth(out + segment) > width - 3) break;
    out += segment;
  }
  return `${out}...`;
}
