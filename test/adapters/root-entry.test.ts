/**
 * The root entry imports none of the adapter SDKs: importing `toolgate` must work in an application that
 * installed none of them. Checked by importing it in a child process whose module loader refuses to
 * resolve any SDK, for the TypeScript source and for the compiled output.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = process.cwd();
const SDKS = [
  'ai',
  '@ai-sdk/',
  '@openai/agents',
  '@modelcontextprotocol/sdk',
  '@modelcontextprotocol/client',
  '@modelcontextprotocol/server',
  '@modelcontextprotocol/core',
  'jose',
  'commander',
  // The stores' drivers (toolgate/sqlite, /postgres, /redis, /otel).
  'better-sqlite3',
  'pg',
  'ioredis',
  '@opentelemetry/',
];

// A resolve hook that fails on any SDK specifier, registered before the entry is imported.
const HOOK = `
export async function resolve(specifier, context, next) {
  for (const sdk of ${JSON.stringify(SDKS)}) {
    if (specifier === sdk || specifier.startsWith(sdk.endsWith('/') ? sdk : sdk + '/')) {
      throw new Error('FORBIDDEN SDK IMPORT: ' + specifier + ' from ' + context.parentURL);
    }
  }
  return next(specifier, context);
}`;
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)});`;

async function importWithoutSdks(entry: string): Promise<{ ok: boolean; output: string }> {
  const script = `const m = await import(${JSON.stringify(pathToFileURL(entry).href)}); console.log('EXPORTS', Object.keys(m).length);`;
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        `data:text/javascript,${encodeURIComponent(REGISTER)}`,
        '--input-type=module',
        '-e',
        script,
      ],
      { cwd: ROOT },
    );
    return { ok: true, output: stdout + stderr };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

describe('the root entry imports no adapter SDK', () => {
  it('src/index.ts loads with every SDK unresolvable', async () => {
    const result = await importWithoutSdks(join(ROOT, 'src/index.ts'));
    expect(result.output).not.toMatch(/FORBIDDEN/);
    expect(result.ok).toBe(true);
    expect(result.output).toMatch(/EXPORTS \d+/);
  });

  it('toolgate/stores (memory stores, limiter, JSONL audit) loads with every driver unresolvable', async () => {
    const result = await importWithoutSdks(join(ROOT, 'src/stores/index.ts'));
    expect(result.output).not.toMatch(/FORBIDDEN/);
    expect(result.ok).toBe(true);
  });

  it('the check does catch an SDK import (each adapter entry is refused under the same hook)', async () => {
    for (const entry of [
      'src/stores/sqlite.ts',
      'src/stores/postgres.ts',
      'src/stores/redis.ts',
      'src/stores/otel.ts',
      'src/adapters/ai-sdk/index.ts',
      'src/adapters/openai-agents/index.ts',
      'src/adapters/mcp/index.ts',
    ]) {
      const result = await importWithoutSdks(join(ROOT, entry));
      expect(result.ok, entry).toBe(false);
      expect(result.output).toMatch(/FORBIDDEN SDK IMPORT/);
    }
  });

  describe('compiled output', () => {
    let out = '';
    beforeAll(async () => {
      // Inside the project, so that the build resolves its runtime dependencies (ajv) from node_modules.
      mkdirSync(join(ROOT, 'node_modules/.cache'), { recursive: true });
      out = mkdtempSync(join(ROOT, 'node_modules/.cache/toolgate-build-'));
      await run(
        process.execPath,
        [
          join(ROOT, 'node_modules/typescript/bin/tsc'),
          '-p',
          'tsconfig.build.json',
          '--outDir',
          out,
          '--declarationMap',
          'false',
          '--sourceMap',
          'false',
        ],
        { cwd: ROOT },
      );
    }, 120_000);
    afterAll(() => rmSync(out, { recursive: true, force: true }));

    it('dist/index.js loads with every SDK unresolvable', async () => {
      const result = await importWithoutSdks(join(out, 'index.js'));
      expect(result.output).not.toMatch(/FORBIDDEN/);
      expect(result.ok).toBe(true);
    });

    it('every subpath export of package.json points at a built file', () => {
      const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
        exports: Record<string, string | { types: string; import: string }>;
        bin: Record<string, string>;
      };
      for (const [subpath, target] of Object.entries(pkg.exports)) {
        if (typeof target === 'string') continue;
        for (const file of [target.import, target.types]) {
          expect(existsSync(join(out, file.replace(/^\.\/dist\//, ''))), `${subpath} → ${file}`).toBe(true);
        }
      }
      for (const file of Object.values(pkg.bin))
        expect(existsSync(join(out, file.replace(/^\.\/dist\//, ''))), file).toBe(true);
      expect(Object.keys(pkg.exports)).toEqual(expect.arrayContaining(['.', './mcp', './ai-sdk', './openai-agents']));
    });

    it('each SDK is an optional peer dependency, and a dev dependency for the tests', () => {
      const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<
        string,
        Record<string, unknown>
      >;
      for (const sdk of ['ai', '@openai/agents', '@modelcontextprotocol/sdk', 'pg', 'ioredis', '@opentelemetry/api']) {
        expect(pkg['peerDependencies']?.[sdk], sdk).toBeDefined();
        expect(pkg['peerDependenciesMeta']?.[sdk], sdk).toEqual({ optional: true });
        expect(pkg['devDependencies']?.[sdk], sdk).toBeDefined();
        expect(pkg['dependencies']?.[sdk], sdk).toBeUndefined();
      }
    });
  });
});
