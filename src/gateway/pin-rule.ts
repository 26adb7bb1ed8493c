/**
 * The pin rules of the enforced policy (src/gateway/pins.ts keeps the pins): a tool whose definition drifted from its
 * pin is refused or asked for, and a tool its upstream's bound of pins left unpinned is refused.
 */
import { PINS_PER_UPSTREAM_MAX } from './lock-file.js';
import { PermissionPolicy } from '../permissions/policy.js';
import type { PermissionRule } from '../permissions/rule.js';
import type { Tool } from '../tool.js';

/** The rule that refuses a tool whose definition drifted from its pin. */
export const PIN_RULE = 'pinned-definition';

/** The rule that refuses a tool not pinned because its upstream holds PINS_PER_UPSTREAM_MAX pins. */
export const PIN_BOUND_RULE = 'pins-per-upstream';

/**
 * The enforced policy with the pin rules: a tool `unpinned` says its upstream's bound of pins left unpinned is refused
 * (a first rule, whatever `onDrift` says: nothing pins what a person would approve, so its next rug pull would pass); a
 * drifted tool is refused (a first rule), or, with `ask`, every rule that would allow or ask for it asks instead,
 * under its drifted name — so a deny still denies, an allow becomes a person's call, and an ask is asked anew,
 * saying why.
 */
export function withPinRule(
  policy: PermissionPolicy,
  drifted: (tool: Tool) => boolean,
  onDrift: 'refuse' | 'ask',
  unpinned?: (tool: Tool) => boolean,
): PermissionPolicy {
  const reason =
    "the tool's definition differs from the one pinned in the lock file (a changed title, description, schema, annotations or _meta); `toolgate pin` shows the diff and the bound `--accept tool=<sha256>` that re-approves it";
  const rules: PermissionRule[] = [];
  if (unpinned)
    rules.push({
      name: PIN_BOUND_RULE,
      match: (tool) => unpinned(tool),
      result: 'deny',
      reason: `the tool is not pinned: its upstream holds ${PINS_PER_UPSTREAM_MAX.toLocaleString('en-US')} pins in the lock file (PINS_PER_UPSTREAM_MAX), and pins are never dropped to make room; remove the entries of tools the upstream no longer offers from the lock file, and the next reload or listing pins it`,
    });
  if (onDrift === 'refuse') {
    rules.push({ name: PIN_RULE, match: (tool) => drifted(tool), result: 'deny', reason }, ...policy.rules);
  } else {
    for (const rule of policy.rules) {
      // An allow becomes an ask; an ask is asked under its own drifted name and the pin's reason, so the
      // person sees the drift and an answer given for the definition before it is not taken for it.
      if (rule.result === 'allow' || rule.result === 'ask') {
        const match = rule.match;
        rules.push({
          ...rule,
          name: `${rule.name} (drifted definition)`,
          result: 'ask',
          reason,
          match: (tool, params) => drifted(tool) && (match ? match.call(rule, tool, params) : true),
        });
      }
      rules.push(rule);
    }
    if (policy.fallback === 'allow')
      rules.push({ name: PIN_RULE, match: (tool) => drifted(tool), result: 'ask', reason });
  }
  return new PermissionPolicy({
    rules,
    fallback: policy.fallback,
    version: policy.version,
    ...(policy.handler ? { handler: policy.handler } : {}),
  });
}
