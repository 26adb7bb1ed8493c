import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
    testTimeout: 30_000,
    pool: 'forks',
    // In CI, a JSON report lets .ci/run print a plain "N passed, N failed" closing line.
    reporters: process.env['CI'] ? ['default', 'json'] : ['default'],
    ...(process.env['CI'] ? { outputFile: { json: 'test-results.json' } } : {}),
  },
});
