/** The three outcomes of a permission check (the Permission System spec's `PermissionResult`). */
export const PermissionResult = { ALLOW: 'allow', DENY: 'deny', ASK: 'ask' } as const;
export type PermissionResult = (typeof PermissionResult)[keyof typeof PermissionResult];

export function isPermissionResult(value: unknown): value is PermissionResult {
  return value === 'allow' || value === 'deny' || value === 'ask';
}
