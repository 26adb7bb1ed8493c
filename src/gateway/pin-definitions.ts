/**
 * The pinned form of a tool definition, its hashes and the readable diff of two (src/gateway/pins.ts keeps the pins).
 */
import { createPatch } from 'diff';
import { parseJsonText } from '../json-text.js';
import { canonicalJson, hashOf } from '../crypto.js';
import type { LockEntry, PinnedDefinition } from './lock-file.js';

/**
 * The pinned form of an MCP tool definition: all of it (title, output schema descriptions, `_meta` and
 * annotations are read by the model or the client as much as the description is), fields that are
 * `undefined` dropped. The definition is what the upstream listed, so a field added by a newer protocol
 * revision is pinned too.
 */
export function pinnedDefinition(tool: {
  readonly name: string;
  readonly description?: string | undefined;
  readonly inputSchema: unknown;
  readonly [field: string]: unknown;
}): PinnedDefinition {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(tool)) if (value !== undefined) out[field] = value;
  return out as unknown as PinnedDefinition;
}

/** The four parts a version-1 lock file pinned, of a whole definition. */
function legacyDefinition(definition: PinnedDefinition): PinnedDefinition {
  return {
    name: definition.name,
    ...(definition.description !== undefined ? { description: definition.description } : {}),
    inputSchema: definition.inputSchema,
    ...(definition.annotations !== undefined ? { annotations: definition.annotations } : {}),
  };
}

/** The offered definition in the shape the entry pinned (whole, or the four parts of a version-1 entry). */
export function comparable(pinned: LockEntry, offered: PinnedDefinition): PinnedDefinition {
  return pinned.shape === 1 ? legacyDefinition(offered) : offered;
}

/** True when `offered` is what `pinned` pins. */
export function samePin(pinned: LockEntry, offered: PinnedDefinition): boolean {
  return pinned.sha256 === hashOf(comparable(pinned, offered));
}

/** The hash an approval is bound to (`ApprovalBinding.pin`): the whole definition a call is made against. */
export function definitionPin(definition: PinnedDefinition): string {
  return hashOf(definition);
}

const listedPins = new WeakMap<object, string>();

/**
 * {@link definitionPin} of a definition as the upstream listed it, hashed once per listing object: the
 * connection keeps each listed definition as parsed and never changes it in place (a refresh lists new
 * objects), so a call pays a WeakMap look-up instead of canonical JSON and SHA-256 of the whole definition.
 */
export function listedDefinitionPin(definition: Parameters<typeof pinnedDefinition>[0]): string {
  let pin = listedPins.get(definition);
  if (pin === undefined) {
    pin = definitionPin(pinnedDefinition(definition));
    listedPins.set(definition, pin);
  }
  return pin;
}

/**
 * The most lines a readable diff changes: jsdiff's Myers diff costs about the square of the lines changed, and a
 * drifted tool is diffed at each listing of its upstream (an upstream that pins 4,000 lines of `_meta` and offers
 * 4,000 others cost 3.1 s of CPU per `tools/list_changed`, atk-gwlist). Past it the offered definition is shown whole.
 */
const DIFF_EDITS_MAX = 200;

/** A readable unified diff between two definitions (canonical JSON, pretty-printed). */
export function definitionDiff(name: string, pinned: PinnedDefinition, offered: PinnedDefinition): string {
  const pretty = (d: PinnedDefinition): string => `${JSON.stringify(parseJsonText(canonicalJson(d)), null, 2)}\n`;
  const after = pretty(offered);
  const patch = createPatch(name, pretty(pinned), after, 'pinned', 'offered now', { maxEditLength: DIFF_EDITS_MAX });
  if (patch !== undefined) return patch.replace(/^Index: .*\n=+\n/, '');
  return `the definition of ${JSON.stringify(name)} changed in more than ${DIFF_EDITS_MAX} lines (not shown line by line); offered now:\n${after}`;
}
