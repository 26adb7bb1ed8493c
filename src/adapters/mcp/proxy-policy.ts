/**
 * The gateway's policy file, in a deliberately small JSON format, until the policy-file loader
 * (`toolgate/policy`) takes its place: `loadPolicyForProxy` is the one function to point at it.
 *
 * ```json
 * {
 *   "version": "2026-11-29",
 *   "fallback": "deny",
 *   "agents":  { "fs-agent": { "tools": ["read_text_file", "write_file"] } },
 *   "tenants": { "acme": { "tools": ["read_text_file", "write_file"] } },
 *   "rules": [
 *     { "name": "reads", "tags": ["read_only"], "result": "allow" },
 *     { "name": "inbox-writes", "tools": ["write_file"], "arguments": { "path": { "within": ["/srv/inbox"] } }, "result": "allow" },
 *     { "name": "other-writes", "tools": ["write_file"], "result": "deny", "reason": "writes go to /srv/inbox only" }
 *   ]
 * }
 * ```
 * A rule matches when its selectors (`tools`, `tags`) select the tool and every `arguments` condition
 * holds: `within` (the argument is a path lexically inside one of the directories; symlinks are not
 * resolved), `equals` (the argument equals the JSON value).
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { Ajv } from 'ajv';
import { ConfigurationError } from '../../errors.js';
import { PermissionPolicy } from '../../permissions/policy.js';
import type { PermissionResult } from '../../permissions/result.js';
import type { PermissionRule } from '../../permissions/rule.js';

/** A loaded gateway policy: the permission policy and the agent and tenant layers it names. */
export interface ProxyPolicy {
  readonly policy: PermissionPolicy;
  /** Declared tools per agent name (the agent layer). */
  readonly agents: Readonly<Record<string, { readonly tools: readonly string[] }>>;
  /** Permitted tools per tenant id (the tenant layer). */
  readonly tenants: Readonly<Record<string, { readonly tools: readonly string[] }>>;
}

interface ArgumentCondition {
  readonly within?: readonly string[];
  readonly equals?: unknown;
}
interface RuleData {
  readonly name: string;
  readonly result: PermissionResult;
  readonly reason?: string;
  readonly tools?: readonly string[];
  readonly tags?: readonly string[];
  readonly arguments?: Readonly<Record<string, ArgumentCondition>>;
}
interface PolicyData {
  readonly version?: string;
  readonly fallback?: PermissionResult;
  readonly rules: readonly RuleData[];
  readonly agents?: Readonly<Record<string, { readonly tools: readonly string[] }>>;
  readonly tenants?: Readonly<Record<string, { readonly tools: readonly string[] }>>;
}

const names = { type: 'array', items: { type: 'string', minLength: 1 } } as const;
const layer = { type: 'object', additionalProperties: { type: 'object', required: ['tools'], additionalProperties: false, properties: { tools: names } } } as const;
const SCHEMA = {
  type: 'object',
  required: ['rules'],
  additionalProperties: false,
  properties: {
    version: { type: 'string' },
    fallback: { enum: ['allow', 'deny', 'ask'] },
    agents: layer,
    tenants: layer,
    rules: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'result'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', minLength: 1 },
          result: { enum: ['allow', 'deny', 'ask'] },
          reason: { type: 'string' },
          tools: names,
          tags: names,
          arguments: {
            type: 'object',
            additionalProperties: {
              type: 'object',
              additionalProperties: false,
              minProperties: 1,
              properties: { within: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } }, equals: {} },
            },
          },
        },
      },
    },
  },
} as const;

let validate: ReturnType<Ajv['compile']> | undefined;

/**
 * Loads the gateway's policy file (JSON, format above). Any problem (unreadable, not JSON, not the
 * format, a rule the core rejects) is a ConfigurationError naming the file: the gateway does not start.
 */
export function loadPolicyForProxy(file: string): ProxyPolicy {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    throw new ConfigurationError(`cannot read the policy file ${JSON.stringify(file)}: ${(cause as Error).message}`, { cause });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (cause) {
    throw new ConfigurationError(`the policy file ${JSON.stringify(file)} is not valid JSON: ${(cause as Error).message}`, { cause });
  }
  return policyFromData(data, file);
}

/** Builds a gateway policy from already-parsed data (the same checks as {@link loadPolicyForProxy}). */
export function policyFromData(data: unknown, where = 'policy'): ProxyPolicy {
  validate ??= new Ajv({ allErrors: true, strict: false }).compile(SCHEMA);
  if (!validate(data)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`).join('; ');
    throw new ConfigurationError(`the policy file ${JSON.stringify(where)} does not have the expected shape: ${problems}`);
  }
  const policyData = data as PolicyData;
  const rules: PermissionRule[] = policyData.rules.map((rule) => {
    const conditions = Object.entries(rule.arguments ?? {});
    return {
      name: rule.name,
      result: rule.result,
      ...(rule.reason !== undefined ? { reason: rule.reason } : {}),
      ...(rule.tools ? { tools: rule.tools } : {}),
      ...(rule.tags ? { tags: rule.tags } : {}),
      ...(conditions.length > 0 ? { match: (_tool, params) => conditions.every(([arg, condition]) => holds(params[arg], condition)) } : {}),
    } satisfies PermissionRule;
  });
  try {
    const policy = new PermissionPolicy({
      rules,
      ...(policyData.fallback ? { fallback: policyData.fallback } : {}),
      ...(policyData.version ? { version: policyData.version } : {}),
    });
    return { policy, agents: policyData.agents ?? {}, tenants: policyData.tenants ?? {} };
  } catch (cause) {
    throw new ConfigurationError(`the policy file ${JSON.stringify(where)}: ${(cause as Error).message}`, { cause });
  }
}

function holds(value: unknown, condition: ArgumentCondition): boolean {
  if (condition.within && !(typeof value === 'string' && condition.within.some((dir) => inside(value, dir)))) return false;
  if ('equals' in condition && JSON.stringify(value) !== JSON.stringify(condition.equals)) return false;
  return true;
}

function inside(path: string, dir: string): boolean {
  if (path.includes('\0')) return false;
  const rel = relative(resolve(dir), resolve(path));
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
