import { describe, expect, it } from 'vitest';
import * as toolgate from '../../src/index.js';

describe('the root entry', () => {
  it('exports the names DESIGN.md pins', () => {
    for (const name of [
      'canonical',
      'ToolAllowlist',
      'ToolAllowlistGuard',
      'ToolNotPermittedError',
      'ConfigurationError',
      'ToolgateError',
      'PermissionResult',
      'ToolTag',
      'PermissionPolicy',
      'ALLOW_READONLY',
      'ASK_DESTRUCTIVE',
      'DENY_PRIVILEGED',
      'ASK_NETWORK',
      'ASK_FILE_SYSTEM',
      'defineTool',
      'ToolRegistry',
      'isToolgateError',
    ]) {
      expect(toolgate, name).toHaveProperty(name);
    }
    expect(toolgate.PermissionResult).toEqual({ ALLOW: 'allow', DENY: 'deny', ASK: 'ask' });
    expect(Object.values(toolgate.ToolTag).sort()).toEqual([
      'destructive',
      'file_system',
      'network',
      'privileged',
      'read_only',
      'slow',
    ]);
  });
});
