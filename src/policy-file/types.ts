/**
 * The shapes of a policy file, as data: what `schema/policy.schema.json` describes.
 */
import type { PermissionResult } from '../permissions/result.js';
import type { ToolLocality, ToolTag } from '../tool.js';

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
}

/** A limit in a policy file (the shape of `LimitRule`, see src/limits/limiter.ts). */
export interface PolicyLimitData {
  readonly name: string;
  readonly per?: readonly ('tenant' | 'caller' | 'agent' | 'run')[];
  readonly tools?: readonly string[];
  readonly tags?: readonly string[];
  readonly max: number;
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
