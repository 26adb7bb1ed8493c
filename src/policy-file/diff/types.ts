/**
 * The shape of a policy diff (`diffPolicies`, `toolgate diff --json`): what two policy files decide
 * differently, region by region, each with a call that shows it.
 */

/** Which way a change moves access: more calls run (widen), fewer (narrow), or neither in one word. */
export type DiffDirection = 'widen' | 'narrow' | 'other';

/**
 * What changed for a region of calls: newly allowed, newly denied, newly asked (from allow or deny),
 * asked under another rule, a limit that counts them changed.
 */
export type DiffKind = 'allowed' | 'denied' | 'asked' | 'ask-rule' | 'limit';

/** Who asks: the agent, tenant and scopes of one call (absent: none given). */
export interface DiffWho {
  readonly agent?: string;
  readonly tenant?: string;
  readonly scopes?: readonly string[];
}

/** How one side decides a call, as `explain` reports it. */
export interface DiffVerdict {
  readonly effect: 'allow' | 'deny' | 'ask';
  /** The gate's stage (`allowlist`, `validation`, `policy`, …), or `context`: that file does not declare the agent or tenant. */
  readonly stage: string;
  /** `rule`, `fallback`, `rule_error` (a rule could not judge the call), `allowlist`, `context`. */
  readonly by: string;
  /** The deciding (or refusing-to-judge) rule, by name. */
  readonly rule: string | null;
  /** Its line in its file, when a rule decides. */
  readonly line: number | null;
  /** The refusing allowlist layer (`not_declared`: the agent does not declare the tool), else null. */
  readonly layer: string | null;
  readonly reason: string;
}

/** A concrete call: replayed through `explain` against each file it gives the two verdicts of its region. */
export interface DiffExample {
  readonly tool: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly who: DiffWho;
  /**
   * The tags the tool carries of its own, where a file does not describe the tool (its tags then come
   * from the live tool); absent when they do not matter.
   */
  readonly ownTags?: readonly string[];
}

/**
 * Where a region applies: the agents, tenants and scopes (`null` in a list: none given) whose calls it
 * holds, or `'any'`.
 */
export interface DiffWhoSet {
  readonly agents: readonly (string | null)[] | 'any';
  readonly tenants: readonly (string | null)[] | 'any';
  readonly scopes: readonly (string | null)[] | 'any';
}

/** One region of calls decided one way under the old file and another under the new. */
export interface DiffChange {
  readonly kind: DiffKind;
  readonly direction: DiffDirection;
  /** The tool (canonical name); for tools neither file names, the example's name (see `others`). */
  readonly tool: string;
  /** True when the region is of tools neither file names (selected by a glob, namespace, tag or nothing). */
  readonly others: boolean;
  /**
   * Set for a resource read or a prompt get (the `resources:` / `prompts:` rules): `tool` is then the
   * gate-level tool (`resource`, `prompt`) and the example's arguments are its call (`{ namespace, uri,
   * action }`, `{ namespace, name, action, arguments }`).
   */
  readonly item?: 'resource' | 'prompt';
  readonly who: DiffWhoSet;
  /** The region in words: the conditions its calls meet. */
  readonly where: string;
  readonly old: DiffVerdict;
  readonly new: DiffVerdict;
  readonly example: DiffExample;
  /** For `limit`: the limit and its settings on each side (null: not there). */
  readonly limit?: {
    readonly name: string;
    readonly old: DiffLimit | null;
    readonly new: DiffLimit | null;
  };
}

/** A limit's settings as they count one call. */
export interface DiffLimit {
  /** The max for the example's tenant; null: read from a plan that gives none (every call is refused). */
  readonly max: number | null;
  readonly cost: number;
  readonly windowMs: number | null;
  readonly per: readonly string[];
}

/**
 * A region that may be decided differently but was not proved either way: a condition the diff cannot
 * decide (named in `reason`), or a search stopped at its time limit. Never counted as equal.
 */
export interface DiffUncertain {
  readonly direction: DiffDirection;
  readonly tool: string;
  readonly others: boolean;
  /** Set for the `resources:` / `prompts:` rules, as on {@link DiffChange}. */
  readonly item?: 'resource' | 'prompt';
  readonly who: DiffWhoSet;
  readonly where: string;
  readonly reason: string;
  /** How each side would decide the region's calls, if it holds any (null: not known). */
  readonly old: DiffVerdict | null;
  readonly new: DiffVerdict | null;
}

/** A setting that changed (fallback, modes, caps, pins, approvers, peers): what it was, is, and which way. */
export interface DiffSetting {
  /** `fallback`, `mode`, `rule-mode`, `tenant-cap`, `pin`, `approvals`, `peers`, `schema`, … */
  readonly setting: string;
  /** What it is about (a rule, a tenant, an agent), or null for the whole policy. */
  readonly subject: string | null;
  readonly old: unknown;
  readonly new: unknown;
  readonly direction: DiffDirection;
  readonly text: string;
}

/** The semantic difference of two policy files. */
export interface PolicyDiff {
  readonly old: { readonly file: string | null; readonly version: string };
  readonly new: { readonly file: string | null; readonly version: string };
  /** No region is decided differently and none may be: "no change in what is decided". */
  readonly equal: boolean;
  /** Some region (proved or uncertain) or setting widens access. */
  readonly widens: boolean;
  /** Some region (proved or uncertain) or setting narrows access. */
  readonly narrows: boolean;
  readonly changes: readonly DiffChange[];
  readonly uncertain: readonly DiffUncertain[];
  readonly settings: readonly DiffSetting[];
  readonly stats: {
    /** Tools compared (named in either file), plus one class for the tools neither names. */
    readonly tools: number;
    /** Tools whose rules or layers differ, searched. */
    readonly searched: number;
    readonly ms: number;
  };
}

/** Options of {@link diffPolicies}. */
export interface DiffOptions {
  /** Stop searching after this long; what is left is reported as "may change". @default 20_000 */
  readonly timeLimitMs?: number;
  /** The most branches one tool's search may walk. @default 50_000 */
  readonly budget?: number;
}
