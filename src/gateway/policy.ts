/**
 * The gateway's policy: a toolgate policy file (`toolgate/policy`, YAML or JSON), read with the
 * policy-file loader (`loadPolicyForProxy` is the one place `toolgate gateway` and `toolgate mcp-proxy`
 * read it), what its `tools:` section says about an upstream's tools, and the shape of the policy in force
 * (built and swapped by reload.ts; read by every request's handlers).
 */
import { formatIssue, readPolicyFile } from '../policy-file/load.js';
import type { PolicySet } from '../policy-file/policy-set.js';
import { ConfigurationError } from '../errors.js';
import type { JsonSchema } from '../schema.js';
import type { ToolMetadataInput } from '../tool.js';
import type { GateContext } from '../contracts/gate.js';
import type { Limiter } from '../limits/limiter.js';
import type { PermissionPolicy } from '../permissions/policy.js';
import type { PinTracker } from './pins.js';

/**
 * Loads the gateway's policy file. A file that cannot be read or is refused is a ConfigurationError
 * listing every problem with its position: the gateway does not start.
 */
export async function loadPolicyForProxy(file: string): Promise<PolicySet> {
  const result = await readPolicyFile(file);
  if (!result.ok)
    throw new ConfigurationError(
      `the policy file ${JSON.stringify(file)} was refused:\n${result.issues.map((i) => `  ${formatIssue(i)}`).join('\n')}`,
    );
  return result.policy;
}

/**
 * The tool metadata a policy file declares (its `tools:` section), as local metadata for an upstream's
 * tools: what it states replaces what the server's annotations gave.
 */
export function policyToolMetadata(set: PolicySet): Record<string, ToolMetadataInput> {
  const out: Record<string, ToolMetadataInput> = {};
  for (const [name, spec] of Object.entries(set.data.tools ?? {})) {
    out[name] = {
      ...(spec.tags ? { tags: spec.tags } : {}),
      ...(spec.customTags ? { customTags: spec.customTags } : {}),
      ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
      ...(spec.concurrencySafe !== undefined ? { concurrencySafe: spec.concurrencySafe } : {}),
      ...(spec.locality ? { locality: spec.locality } : {}),
    };
  }
  return out;
}

/**
 * The argument schemas a policy file declares (`tools.<name>.parameters`), for the gateway to check
 * besides the upstream's own `inputSchema`: `explain`/`check` enforce them, so the gateway must too.
 */
export function policyToolParameters(set: PolicySet): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const [name, spec] of Object.entries(set.data.tools ?? {})) if (spec.parameters) out[name] = spec.parameters;
  return out;
}

/** The snapshot a request reads: everything the policy file decides, frozen. */
export interface PolicyInForce {
  readonly set: PolicySet;
  /** The gateway's own context (agent, tenant, caller layers), read by every server per request. */
  readonly context: GateContext;
  /** The pins of the lock file, or null without pinning. */
  readonly pins: PinTracker | null;
  readonly onDrift: 'refuse' | 'ask';
  /** The enforced tool policy: the file's with the pin rule. */
  readonly policy: PermissionPolicy;
  /** The file's `limits:` over the gateway's counter store (charged at step 6 of every tool call), or null. */
  readonly limiter: Limiter | null;
}
