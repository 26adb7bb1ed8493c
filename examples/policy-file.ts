/**
 * Policy as data: a policy file decides the calls of a live registry, and explains one.
 * Run: npx tsx examples/policy-file.ts
 */
import { fileURLToPath } from 'node:url';
import { defineTool, ToolRegistry } from '../src/index.js';
import { explainCall, loadPolicyFile } from '../src/policy-file/index.js';

export async function main(print: (line: string) => void = console.log): Promise<void> {
  const set = await loadPolicyFile(fileURLToPath(new URL('./policies/concierge.yaml', import.meta.url)));

  const registry = new ToolRegistry();
  const readFile = defineTool({
    name: 'read_file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    execute: ({ path }) => `contents of ${String(path)}`,
  });
  // The file's metadata (tags read_only, file_system) over the tool's own, so tag rules select it.
  registry.register(set.withMetadata(readFile));
  registry.setPermissionPolicy(set.policy);

  const context = set.context({ agent: 'concierge', tenant: 'acme', scopes: ['files:read'] });
  for (const path of ['/data/report.txt', '/data/../etc/passwd']) {
    const result = await registry.invoke('read_file', { path }, context);
    print(`read_file ${path}: ${result.status} (${result.decision.rule ?? result.decision.by}) ${result.content}`);
  }

  const why = await explainCall(
    set,
    { name: 'read_file', arguments: { path: '/data/../etc/passwd' } },
    { agent: 'concierge' },
  );
  for (const rule of why.rules.filter((r) => r.outcome !== 'not_reached'))
    print(`  ${rule.rule}: ${rule.outcome} — ${rule.conditions[0]?.detail ?? rule.detail}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
