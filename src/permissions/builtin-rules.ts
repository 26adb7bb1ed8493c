import type { PermissionRule } from './rule.js';

/** Allows tools tagged `read_only`. */
export const ALLOW_READONLY: PermissionRule = Object.freeze({
  name: 'allow_readonly',
  tags: ['read_only'],
  result: 'allow',
  reason: 'The tool only reads data',
});

/** Asks for tools tagged `destructive`. */
export const ASK_DESTRUCTIVE: PermissionRule = Object.freeze({
  name: 'ask_destructive',
  tags: ['destructive'],
  result: 'ask',
  reason: 'The tool modifies or deletes data',
});

/** Denies tools tagged `privileged`. */
export const DENY_PRIVILEGED: PermissionRule = Object.freeze({
  name: 'deny_privileged',
  tags: ['privileged'],
  result: 'deny',
  reason: 'The tool requires elevated permissions',
});

/** Asks for tools tagged `network`. */
export const ASK_NETWORK: PermissionRule = Object.freeze({
  name: 'ask_network',
  tags: ['network'],
  result: 'ask',
  reason: 'The tool requires network access',
});

/** Asks for tools tagged `file_system`. */
export const ASK_FILE_SYSTEM: PermissionRule = Object.freeze({
  name: 'ask_file_system',
  tags: ['file_system'],
  result: 'ask',
  reason: 'The tool accesses the file system',
});
