/**
 * toolgate's error taxonomy: one base class with a stable `code`, and a few subclasses.
 *
 * On the dispatch path a refusal is a value (a Decision plus an error tool result), not an exception;
 * these classes are thrown for configuration mistakes and by the explicitly throwing forms
 * (`ToolAllowlist.check`).
 */

/** Stable machine-readable codes, one per subclass. */
export const ErrorCode = {
  CONFIGURATION: 'ERR_TOOLGATE_CONFIGURATION',
  TOOL_NOT_PERMITTED: 'ERR_TOOLGATE_TOOL_NOT_PERMITTED',
  RUN_STATE: 'ERR_TOOLGATE_RUN_STATE',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const BRAND = Symbol.for('toolgate.error');

/** The base class of every error toolgate throws. Use {@link isToolgateError} rather than `instanceof` across package copies. */
export class ToolgateError extends Error {
  override name = 'ToolgateError';
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/**
 * A configuration that cannot be enforced unambiguously: two declared names with one canonical form, an
 * empty or invisible-character name, a second tool registered under a taken name, a malformed rule.
 */
export class ConfigurationError extends ToolgateError {
  override name = 'ConfigurationError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.CONFIGURATION, message, options);
  }
}

/** Which allowlist layer refused a name. `not_declared`: the agent never declared it. */
export type RefusalLayer = 'not_declared' | 'tenant' | 'caller';

/**
 * A tool call outside the resolved allowlist. `tool` is the name as it was asked for (not its canonical
 * form), `reason` is the layer that refused it.
 */
export class ToolNotPermittedError extends ToolgateError {
  override name = 'ToolNotPermittedError';
  readonly tool: string;
  readonly agent: string;
  readonly reason: RefusalLayer;
  readonly permitted: readonly string[];
  readonly details: { readonly tool: string; readonly agent: string; readonly reason: RefusalLayer };

  constructor(init: { tool: string; agent: string; reason: RefusalLayer; permitted: readonly string[] }) {
    const { tool, agent, reason, permitted } = init;
    const may = permitted.length === 0 ? 'no tools' : permitted.map((n) => JSON.stringify(n)).join(', ');
    super(
      ErrorCode.TOOL_NOT_PERMITTED,
      `Tool ${JSON.stringify(tool)} is not permitted for agent ${JSON.stringify(agent)} ` +
        `(refused by the ${LAYER_TEXT[reason]}). Agent ${JSON.stringify(agent)} may call: ${may}.`,
    );
    this.tool = tool;
    this.agent = agent;
    this.reason = reason;
    this.permitted = Object.freeze([...permitted]);
    this.details = Object.freeze({ tool, agent, reason });
  }
}

const LAYER_TEXT: Record<RefusalLayer, string> = {
  not_declared: 'agent layer: the agent does not declare it',
  tenant: "tenant layer: the tenant's plan does not include it",
  caller: "caller layer: the caller's scopes do not cover it",
};

/**
 * A paused run's state that cannot be resumed: not a RunState, from another version, or altered since the
 * runner signed it (its HMAC does not verify). Nothing of the run is executed.
 */
export class RunStateError extends ToolgateError {
  override name = 'RunStateError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.RUN_STATE, message, options);
  }
}

/** True for any error thrown by any copy of toolgate (the check does not rely on `instanceof`). */
export function isToolgateError(value: unknown): value is ToolgateError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}
