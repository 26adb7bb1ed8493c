/**
 * The shapes of a policy file, as data: what `schema/policy.schema.json` describes.
 */
import type { PermissionResult } from '../permissions/result.js';
import type { ToolLocality, ToolTag } from '../tool.js';

/** How risky a call is, as the approval inbox shows it. */
export type PolicyRisk = 'low' | 'medium' | 'high';

/** A risk threshold on a tool's arguments: when every condition holds, the call is at least `level`. */
export interface PolicyRiskThresholdData {
  readonly level: PolicyRisk;
  readonly when: Readonly<Record<string, PolicyConditionData>>;
}

/** One tool's metadata in a policy file. */
export interface PolicyToolData {
  readonly description?: string;
  readonly tags?: readonly ToolTag[];
  readonly customTags?: readonly string[];
  readonly timeoutMs?: number;
  readonly concurrencySafe?: boolean;
  readonly locality?: ToolLocality;
  /** A JSON Schema for the arguments. */
  readonly parameters?: Readonly<Record<string, unknown>>;
  /** The approval inbox's one-line summary of a call: `"Refund {amount} EUR on order {order}"`. */
  readonly summary?: string;
  /** Risk thresholds on the arguments (the inbox colours and labels the card); the highest that holds counts. */
  readonly risk?: readonly PolicyRiskThresholdData[];
}

/** An agent in a policy file. */
export interface PolicyAgentData {
  readonly tools: readonly string[];
  readonly peers?: readonly string[];
}

/** A tenant in a policy file. */
export interface PolicyTenantData {
  readonly tools?: readonly string[];
  readonly maxIterations?: number;
  readonly maxToolCalls?: number;
  readonly maxCost?: number;
  /** Named values of the tenant's plan that a limit's `max: { plan: name }` reads. */
  readonly plan?: Readonly<Record<string, number>>;
  /** This tenant's max of a limit, by the limit's name (over the limit's own max). */
  readonly limits?: Readonly<Record<string, number>>;
}

/** Tests on one argument; every test given must hold. */
export interface PolicyConditionData {
  readonly equals?: unknown;
  readonly oneOf?: readonly unknown[];
  readonly prefix?: string;
  readonly glob?: string | readonly string[];
  readonly path?: string | readonly string[];
  readonly gt?: number;
  readonly gte?: number;
  readonly lt?: number;
  readonly lte?: number;
  readonly exists?: boolean;
  /** Compare `path` and `glob` ignoring case (full Unicode case folding), for macOS/Windows upstreams. */
  readonly caseInsensitive?: boolean;
  /** Resolve symbolic links on this machine before matching `path`; a path that cannot be resolved denies. */
  readonly realpath?: boolean;
}

/** A rule in a policy file. */
export interface PolicyRuleData {
  readonly name: string;
  readonly result: PermissionResult;
  readonly reason?: string;
  readonly tools?: string | readonly string[];
  readonly namespace?: string;
  readonly tags?: readonly string[];
  readonly when?: Readonly<Record<string, PolicyConditionData>>;
  /** `shadow`: decides and is recorded, not enforced. @default 'enforce' */
  readonly mode?: PolicyMode;
  /** How risky the calls this rule asks about are (the approval inbox labels the card). */
  readonly risk?: PolicyRisk;
}

/** Whether a rule (or a whole policy) is enforced, or only decides and is recorded. */
export type PolicyMode = 'enforce' | 'shadow';

/** A rule for MCP resources behind the gateway. */
export interface PolicyResourceRuleData {
  readonly name: string;
  readonly result: PermissionResult;
  readonly reason?: string;
  readonly mode?: PolicyMode;
  readonly namespace?: string;
  readonly uri?: string | readonly string[];
}

/** A rule for MCP prompts behind the gateway. */
export interface PolicyPromptRuleData {
  readonly name: string;
  readonly result: PermissionResult;
  readonly reason?: string;
  readonly mode?: PolicyMode;
  readonly namespace?: string;
  readonly prompts?: string | readonly string[];
  readonly when?: Readonly<Record<string, PolicyConditionData>>;
}

/** One upstream MCP server of the gateway: exactly one of `command` and `url`. */
export interface PolicyUpstreamData {
  readonly command?: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly url?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly prefix?: boolean;
  readonly trusted?: boolean;
  readonly callTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** Only these tenants may use the upstream (its tools, resources, prompts). @default every request */
  readonly tenants?: readonly string[];
}

/** The gateway section of a policy file. */
export interface PolicyGatewayData {
  readonly upstreams?: Readonly<Record<string, PolicyUpstreamData>>;
  readonly lock?: string;
  readonly pin?: 'refuse' | 'ask' | 'off';
}

/** A limit in a policy file (the shape of `LimitRule`, see src/limits/limiter.ts). */
export interface PolicyLimitData {
  readonly name: string;
  readonly per?: readonly ('tenant' | 'caller' | 'agent' | 'run')[];
  readonly tools?: readonly string[];
  readonly tags?: readonly string[];
  readonly max: number | { readonly plan: string; readonly default?: number };
  readonly window?: string | number;
  readonly cost?: number;
  readonly costs?: Readonly<Record<string, number>>;
}

/** A whole policy file. */
export interface PolicyFileData {
  readonly version: 1;
  readonly fallback?: PermissionResult;
  readonly tools?: Readonly<Record<string, PolicyToolData>>;
  readonly agents?: Readonly<Record<string, PolicyAgentData>>;
  readonly tenants?: Readonly<Record<string, PolicyTenantData>>;
  readonly scopes?: Readonly<Record<string, readonly string[]>>;
  readonly rules?: readonly PolicyRuleData[];
  readonly limits?: readonly PolicyLimitData[];
  /** `shadow`: every rule decides and is recorded, none is enforced. @default 'enforce' */
  readonly mode?: PolicyMode;
  readonly resources?: readonly PolicyResourceRuleData[];
  readonly prompts?: readonly PolicyPromptRuleData[];
  readonly gateway?: PolicyGatewayData;
  /** Who may answer asks in the approval inbox. */
  readonly approvals?: PolicyApprovalsData;
}

/** The `approvals` section: approvers by tenant and tool, four eyes, the time-out. */
export interface PolicyApprovalsData {
  readonly approvers?: {
    readonly tenants?: Readonly<Record<string, readonly string[]>>;
    readonly tools?: Readonly<Record<string, readonly string[]>>;
  };
  readonly fourEyes?: boolean;
  readonly timeoutSeconds?: number;
  /** A reminder goes to the webhooks this long before a request expires. */
  readonly remindBeforeSeconds?: number;
  /** Approvers who may answer too once the reminder is due (an escalation list). */
  readonly escalateTo?: readonly string[];
}

/** A place in a policy file: 1-based line and column. */
export interface PolicyPosition {
  readonly line: number;
  readonly column: number;
}

/** One problem found in a policy file, with where it is and what was expected. */
export interface PolicyIssue extends PolicyPosition {
  /** The file name, or `<input>` for text parsed without one. */
  readonly file: string;
  /** Where in the document, as `rules[2].when.path`. */
  readonly at: string;
  /** A stable code: `yaml`, `schema`, `canonical-collision`, `invalid-name`, `duplicate-rule`, `invalid-pattern`, `invalid-tool`. */
  readonly code: string;
  readonly message: string;
}
