/**
 * The AI SDK's tool-approval signature (`ai` 7, `experimental_toolApprovalSecret`), verified by toolgate
 * itself with node:crypto. The SDK signs each approval request it issues as
 *
 *   base64url(HMAC-SHA256(secret, JSON.stringify(['ai-sdk-tool-approval-v1', approvalId, toolCallId, toolName, digest])))
 *   digest = base64url(SHA-256(canonical JSON of the tool call's input, object keys sorted))
 *
 * (base64url without padding; a string secret is taken as its UTF-8 bytes). Only this v1 payload is
 * accepted, not the SDK's older newline-joined one. Internal: not exported from any entry point.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The SDK's canonical JSON (sorted keys, `undefined` array elements as null), byte for byte — not toolgate's
 * (crypto.ts `canonicalJson` refuses what JSON cannot carry); it must match what the SDK signed.
 */
function sdkCanonicalJson(value: unknown): string {
  if (value === null || value === undefined || typeof value !== 'object') return String(JSON.stringify(value));
  if (Array.isArray(value))
    return `[${value.map((element: unknown) => (element === undefined ? 'null' : sdkCanonicalJson(element))).join(',')}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${sdkCanonicalJson(record[key])}`)
    .join(',')}}`;
}

/** The signed fields of one approval request. */
export interface SignedApproval {
  readonly approvalId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly input: unknown;
}

function expected(secret: Uint8Array, approval: SignedApproval): Buffer {
  const digest = createHash('sha256').update(sdkCanonicalJson(approval.input), 'utf8').digest('base64url');
  const payload = JSON.stringify([
    'ai-sdk-tool-approval-v1',
    approval.approvalId,
    approval.toolCallId,
    approval.toolName,
    digest,
  ]);
  return createHmac('sha256', secret).update(payload, 'utf8').digest();
}

/** A SHA-256 HMAC in unpadded base64url is exactly 43 characters of this alphabet. */
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/;

/** True only if `signature` is the SDK's signature of exactly these fields under `secret` (constant-time compare). */
export function verifyApprovalSignature(secret: Uint8Array, signature: unknown, approval: SignedApproval): boolean {
  if (typeof signature !== 'string' || !SIGNATURE.test(signature)) return false;
  if (
    typeof approval.approvalId !== 'string' ||
    typeof approval.toolCallId !== 'string' ||
    typeof approval.toolName !== 'string'
  )
    return false;
  let want: Buffer;
  try {
    want = expected(secret, approval);
  } catch {
    return false; // an input the SDK could not have signed (a cycle, a BigInt): not approved
  }
  const got = Buffer.from(signature, 'base64url');
  return got.length === want.length && timingSafeEqual(got, want);
}

/** The SDK's signature of these fields (for tests and for servers that issue approval requests themselves). */
export function signApproval(secret: Uint8Array, approval: SignedApproval): string {
  return expected(secret, approval).toString('base64url');
}

/**
 * The key the SDK signs approval requests with, derived from the server's secret for one context (tenant
 * id, caller id, agent) and the policy version in force: an approval signed in one tenant's, caller's or
 * agent's conversation, or under another policy version, does not verify under another. Recomputed only
 * when the policy version changes.
 */
export function approvalKeys(
  secret: Uint8Array,
  context: { readonly tenant: string | null; readonly caller: string | null; readonly agent: string | null },
  policyVersion: () => string | null,
): () => Uint8Array {
  let last: { readonly version: string | null; readonly key: Uint8Array } | null = null;
  return () => {
    const version = policyVersion();
    if (last === null || last.version !== version) {
      const payload = JSON.stringify([
        'toolgate.ai-sdk.approval-key',
        context.tenant,
        context.caller,
        context.agent,
        version,
      ]);
      last = { version, key: new Uint8Array(createHmac('sha256', secret).update(payload, 'utf8').digest()) };
    }
    return last.key;
  };
}
