/**
 * Settings that changed beside the rules: the fallback, the policy's and each rule's mode (shadow or
 * enforced; tool, resource and prompt rules), tools' descriptions (summary, risk labels, time-out,
 * concurrency, locality), tenants' run caps, the gateway's pin mode, upstreams and lock, the approvals
 * section and agents' peers. Their
 * effect on decisions is in the regions; this says what moved, and which way, on its own (a reload guard
 * holds a fallback turned to allow or a rule put in shadow whatever the regions show).
 */
import type { PermissionResult } from '../../permissions/result.js';
import type { SideModel } from './context.js';
import { stableJson } from './rules.js';
import type { DiffDirection, DiffSetting } from './types.js';

const OPEN: Record<PermissionResult, number> = { deny: 0, ask: 1, allow: 2 };
const PIN: Record<string, number> = { refuse: 0, ask: 1, off: 2 };

function way(a: number, b: number): DiffDirection | null {
  return b > a ? 'widen' : b < a ? 'narrow' : null;
}

export function diffSettings(oldSide: SideModel, newSide: SideModel): DiffSetting[] {
  const out: DiffSetting[] = [];
  const add = (
    setting: string,
    subject: string | null,
    a: unknown,
    b: unknown,
    direction: DiffDirection,
    text: string,
  ): void => {
    out.push({ setting, subject, old: a ?? null, new: b ?? null, direction, text });
  };
  const od = oldSide.set.data;
  const nd = newSide.set.data;

  const fa = od.fallback ?? 'deny';
  const fb = nd.fallback ?? 'deny';
  const fw = way(OPEN[fa], OPEN[fb]);
  if (fw) add('fallback', null, fa, fb, fw, `the fallback changed from ${fa} to ${fb}`);

  const ma = od.mode ?? 'enforce';
  const mb = nd.mode ?? 'enforce';
  if (ma !== mb)
    add(
      'mode',
      null,
      ma,
      mb,
      mb === 'shadow' ? 'widen' : 'narrow',
      mb === 'shadow'
        ? 'the whole policy is in shadow mode: no rule is enforced and the fallback is allow'
        : 'the policy is enforced again (it was in shadow mode)',
    );

  // Rule modes, for rules in both files (by name, else a renamed rule by what it decides).
  const byName = new Map(newSide.rules.map((r) => [r.name, r]));
  const byPrint = new Map(newSide.rules.map((r) => [r.fingerprint, r]));
  for (const r of oldSide.rules) {
    const s = byName.get(r.name) ?? byPrint.get(r.fingerprint);
    if (!s || s.shadow === r.shadow) continue;
    add(
      'rule-mode',
      s.name,
      r.shadow ? 'shadow' : 'enforce',
      s.shadow ? 'shadow' : 'enforce',
      s.shadow ? 'widen' : 'narrow',
      s.shadow
        ? `rule ${JSON.stringify(s.name)} is in shadow mode: recorded, no longer enforced`
        : `rule ${JSON.stringify(s.name)} is enforced again`,
    );
  }

  // The same for the resources: and prompts: rules (compared as the gate's rule form in items.ts).
  for (const list of ['resources', 'prompts'] as const) {
    const after = new Map((nd[list] ?? []).map((r) => [r.name, r]));
    for (const r of od[list] ?? []) {
      const s = after.get(r.name);
      const was = r.mode === 'shadow';
      const is = s?.mode === 'shadow';
      if (!s || was === is) continue;
      add(
        'rule-mode',
        `${list}: ${s.name}`,
        was ? 'shadow' : 'enforce',
        is ? 'shadow' : 'enforce',
        is ? 'widen' : 'narrow',
        is
          ? `${list} rule ${JSON.stringify(s.name)} is in shadow mode: recorded, no longer enforced`
          : `${list} rule ${JSON.stringify(s.name)} is enforced again`,
      );
    }
  }

  // What a tool's description says beside its tags and parameters (those are in the regions): the
  // inbox's summary and risk labels, its time-out, concurrency and locality. No decision reads them.
  for (const [tool, b] of Object.entries(nd.tools ?? {})) {
    const a = od.tools?.[tool];
    if (!a) continue;
    for (const key of ['description', 'summary', 'risk', 'timeoutMs', 'concurrencySafe', 'locality'] as const)
      if (stableJson(a[key] ?? null) !== stableJson(b[key] ?? null))
        add('tool', `${tool}.${key}`, a[key], b[key], 'other', `tool ${JSON.stringify(tool)}'s ${key} changed`);
  }

  for (const [id, b] of Object.entries(nd.tenants ?? {})) {
    const a = od.tenants?.[id];
    if (!a) continue;
    for (const cap of ['maxIterations', 'maxToolCalls', 'maxCost'] as const) {
      const x = a[cap] ?? Infinity;
      const y = b[cap] ?? Infinity;
      const w = way(x, y);
      if (w)
        add(
          'tenant-cap',
          id,
          a[cap],
          b[cap],
          w,
          `tenant ${JSON.stringify(id)}'s ${cap} changed from ${a[cap] ?? 'none'} to ${b[cap] ?? 'none'}`,
        );
    }
  }

  if (od.gateway || nd.gateway) {
    const pa = od.gateway?.pin ?? 'refuse';
    const pb = nd.gateway?.pin ?? 'refuse';
    const w = way(PIN[pa] ?? 0, PIN[pb] ?? 0);
    if (w) add('pin', null, pa, pb, w, `gateway.pin changed from ${pa} to ${pb}`);
    const ua = JSON.stringify(Object.keys(od.gateway?.upstreams ?? {}).sort());
    const ub = JSON.stringify(Object.keys(nd.gateway?.upstreams ?? {}).sort());
    if (ua !== ub)
      add(
        'upstreams',
        null,
        JSON.parse(ua),
        JSON.parse(ub),
        'other',
        'the gateway upstreams changed (they take effect at a restart)',
      );
    else
      for (const [up, b] of Object.entries(nd.gateway?.upstreams ?? {}))
        if (stableJson(od.gateway?.upstreams?.[up] ?? null) !== stableJson(b))
          add(
            'upstreams',
            up,
            null,
            null,
            'other',
            `the gateway upstream ${JSON.stringify(up)}'s settings changed (they take effect at a restart)`,
          );
    if ((od.gateway?.lock ?? null) !== (nd.gateway?.lock ?? null))
      add('lock', null, od.gateway?.lock, nd.gateway?.lock, 'other', 'gateway.lock (the pin lock file) changed');
  }

  const aa = od.approvals ?? {};
  const ab = nd.approvals ?? {};
  if ((aa.fourEyes ?? false) !== (ab.fourEyes ?? false))
    add(
      'approvals',
      'fourEyes',
      aa.fourEyes ?? false,
      ab.fourEyes ?? false,
      ab.fourEyes ? 'narrow' : 'widen',
      `four eyes turned ${ab.fourEyes ? 'on' : 'off'}`,
    );
  if (aa.timeoutSeconds !== ab.timeoutSeconds)
    add(
      'approvals',
      'timeoutSeconds',
      aa.timeoutSeconds,
      ab.timeoutSeconds,
      'other',
      `the approval time-out changed from ${aa.timeoutSeconds ?? 'default'} to ${ab.timeoutSeconds ?? 'default'} s`,
    );
  if (stableJson(aa.approvers ?? {}) !== stableJson(ab.approvers ?? {}))
    add('approvals', 'approvers', aa.approvers, ab.approvers, 'other', 'who may answer approvals changed');
  if (stableJson([...(aa.escalateTo ?? [])].sort()) !== stableJson([...(ab.escalateTo ?? [])].sort()))
    add(
      'approvals',
      'escalateTo',
      aa.escalateTo,
      ab.escalateTo,
      'other',
      'who may answer a request once its reminder is due (escalateTo) changed',
    );
  if (aa.remindBeforeSeconds !== ab.remindBeforeSeconds)
    add(
      'approvals',
      'remindBeforeSeconds',
      aa.remindBeforeSeconds,
      ab.remindBeforeSeconds,
      'other',
      `the reminder before a request expires changed from ${aa.remindBeforeSeconds ?? 'none'} to ${ab.remindBeforeSeconds ?? 'none'} s`,
    );

  for (const [agent, b] of Object.entries(nd.agents ?? {})) {
    const a = od.agents?.[agent];
    if (!a) continue;
    const pa = new Set(a.peers ?? []);
    const pb = new Set(b.peers ?? []);
    const added = [...pb].filter((p) => !pa.has(p));
    const removed = [...pa].filter((p) => !pb.has(p));
    if (added.length > 0)
      add(
        'peers',
        agent,
        [...pa],
        [...pb],
        'widen',
        `agent ${JSON.stringify(agent)} may now delegate to ${added.join(', ')}`,
      );
    if (removed.length > 0)
      add(
        'peers',
        agent,
        [...pa],
        [...pb],
        'narrow',
        `agent ${JSON.stringify(agent)} may no longer delegate to ${removed.join(', ')}`,
      );
  }
  return out;
}
