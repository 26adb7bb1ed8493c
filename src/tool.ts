/**
 * Tools: a name, a schema, metadata the rules can select on, and the function that runs.
 */
import { ConfigurationError } from './errors.js';
import { declaredName, describe, namespaceOf } from './names.js';
import {
  compileValidator,
  jsonSchemaOf,
  type JsonSchema,
  type StandardSchemaV1,
  type ToolParameters,
  type Validator,
} from './schema.js';

/** The predefined tags of the Permission System spec. */
export const ToolTag = {
  READ_ONLY: 'read_only',
  DESTRUCTIVE: 'destructive',
  NETWORK: 'network',
  FILE_SYSTEM: 'file_system',
  SLOW: 'slow',
  PRIVILEGED: 'privileged',
} as const;
export type ToolTag = (typeof ToolTag)[keyof typeof ToolTag];
const KNOWN_TAGS: ReadonlySet<string> = new Set(Object.values(ToolTag));

/** Where a tool executes. */
export type ToolLocality = 'local' | 'remote' | 'any';

/** Metadata a tool is declared with; every field is optional. */
export interface ToolMetadataInput {
  /** Predefined classification tags. @default [] */
  readonly tags?: Iterable<ToolTag>;
  /** User-defined tags; rules select on them like predefined ones. @default [] */
  readonly customTags?: Iterable<string>;
  /** Per-call execution timeout in milliseconds. @default the registry's `toolTimeoutMs` */
  readonly timeoutMs?: number;
  /** Whether the tool may run alongside others in one batch. @default true */
  readonly concurrencySafe?: boolean;
  /** Where the tool executes. @default 'any' */
  readonly locality?: ToolLocality;
}

/** A tool's metadata, normalised. `allTags` is the union of predefined and custom tags. */
export interface ToolMetadata {
  readonly tags: ReadonlySet<ToolTag>;
  readonly customTags: ReadonlySet<string>;
  readonly allTags: ReadonlySet<string>;
  readonly timeoutMs: number | undefined;
  readonly concurrencySafe: boolean;
  readonly locality: ToolLocality;
}

/** What a tool's `execute` receives beside its validated arguments. */
export interface ToolExecution {
  /** The id of the call being executed. */
  readonly callId: string;
  /** Aborted when the call times out or the dispatch is cancelled. */
  readonly signal: AbortSignal;
}

/** What {@link defineTool} takes. */
export interface ToolDefinition<Args extends Record<string, unknown> = Record<string, unknown>> {
  /** The declared name; compared everywhere in canonical form. */
  readonly name: string;
  readonly description?: string;
  /** A Standard Schema (zod, valibot…) or a JSON Schema object for the arguments. */
  readonly parameters: StandardSchemaV1<unknown, Args> | JsonSchema;
  readonly metadata?: ToolMetadataInput;
  readonly execute: (args: Args, execution: ToolExecution) => unknown;
}

/** A defined tool, as the registry, the rules and the handlers see it. */
export interface Tool {
  /** The declared spelling. */
  readonly name: string;
  /** The canonical form of the name (see `canonical`). */
  readonly canonicalName: string;
  /** The namespace before the first colon ("github" in "github:search"), or null. */
  readonly namespace: string | null;
  readonly description: string;
  readonly parameters: ToolParameters;
  /** The JSON Schema the model is shown. */
  readonly inputSchema: JsonSchema;
  readonly metadata: ToolMetadata;
  /** Validates raw arguments; never throws for bad input. */
  readonly validate: Validator;
  readonly execute: (args: Record<string, unknown>, execution: ToolExecution) => unknown;
}

/**
 * Defines a tool. The name is checked (no invisible characters, not empty) and the schema compiled now,
 * so that a broken definition fails at start-up rather than on the first call.
 *
 * @example
 * const search = defineTool({
 *   name: 'search',
 *   description: 'Search the catalogue',
 *   parameters: z.object({ query: z.string() }),
 *   metadata: { tags: [ToolTag.READ_ONLY] },
 *   execute: ({ query }) => catalogue.search(query),
 * });
 */
export function defineTool<Args extends Record<string, unknown>>(definition: ToolDefinition<Args>): Tool {
  if (typeof definition !== 'object' || definition === null) {
    throw new TypeError(`defineTool expects a definition object, got ${describe(definition)}`);
  }
  const where = `tool ${typeof definition.name === 'string' ? JSON.stringify(definition.name) : ''}`.trim();
  const canonicalName = declaredName(definition.name, where);
  if (typeof definition.execute !== 'function') {
    throw new ConfigurationError(`${where}: "execute" must be a function, got ${describe(definition.execute)}`);
  }
  if (typeof definition.parameters !== 'object' || definition.parameters === null) {
    throw new ConfigurationError(
      `${where}: "parameters" must be a Standard Schema or a JSON Schema object, got ${describe(definition.parameters)}`,
    );
  }
  let validate: Validator;
  try {
    validate = compileValidator(definition.parameters);
  } catch (cause) {
    throw new ConfigurationError(`${where}: its JSON Schema does not compile: ${(cause as Error).message}`, { cause });
  }
  const tool: Tool = {
    name: definition.name,
    canonicalName,
    namespace: namespaceOf(canonicalName),
    description: definition.description ?? '',
    parameters: definition.parameters,
    inputSchema: jsonSchemaOf(definition.parameters),
    metadata: toolMetadata(definition.metadata, where),
    validate,
    execute: definition.execute as Tool['execute'],
  };
  return Object.freeze(tool);
}

/** Normalises and checks metadata; unknown predefined tags and bad values are ConfigurationErrors. */
export function toolMetadata(input: ToolMetadataInput | undefined, where: string): ToolMetadata {
  const tags = new Set<ToolTag>();
  for (const tag of input?.tags ?? []) {
    if (!KNOWN_TAGS.has(tag)) {
      throw new ConfigurationError(
        `${where}: unknown tag ${describe(tag)}; expected one of ${[...KNOWN_TAGS].join(', ')} (put other tags in customTags)`,
      );
    }
    tags.add(tag);
  }
  const customTags = new Set<string>();
  for (const tag of input?.customTags ?? []) {
    if (typeof tag !== 'string' || tag === '')
      throw new ConfigurationError(`${where}: a custom tag must be a non-empty string, got ${describe(tag)}`);
    customTags.add(tag);
  }
  const timeoutMs = input?.timeoutMs;
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0 && Number.isFinite(timeoutMs))) {
    throw new ConfigurationError(
      `${where}: "timeoutMs" must be a positive number of milliseconds, got ${describe(timeoutMs)}`,
    );
  }
  const locality = input?.locality ?? 'any';
  if (locality !== 'local' && locality !== 'remote' && locality !== 'any') {
    throw new ConfigurationError(`${where}: "locality" must be 'local', 'remote' or 'any', got ${describe(locality)}`);
  }
  const concurrencySafe = input?.concurrencySafe ?? true;
  if (typeof concurrencySafe !== 'boolean') {
    throw new ConfigurationError(`${where}: "concurrencySafe" must be a boolean, got ${describe(concurrencySafe)}`);
  }
  return Object.freeze({
    tags: new SealedSet(tags),
    customTags: new SealedSet(customTags),
    allTags: new SealedSet<string>([...tags, ...customTags]),
    timeoutMs,
    concurrencySafe,
    locality,
  });
}

/**
 * A tool's tags, fixed once the tool is defined: policies and limiters keep what they found per tool, so a
 * tag added later would be seen by some and not others. `add`, `delete` and `clear` throw a TypeError.
 */
class SealedSet<T> extends Set<T> {
  constructor(values: Iterable<T>) {
    super();
    for (const value of values) super.add(value);
    Object.freeze(this);
  }

  override add(value: T): never {
    throw new TypeError(
      `a tool's tags are fixed once it is defined; cannot add ${describe(value)} (define the tool again)`,
    );
  }

  override delete(value: T): never {
    throw new TypeError(
      `a tool's tags are fixed once it is defined; cannot delete ${describe(value)} (define the tool again)`,
    );
  }

  override clear(): never {
    throw new TypeError("a tool's tags are fixed once it is defined; cannot clear them (define the tool again)");
  }
}
