import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['services/**/*.test.ts', 'shared/**/*.test.ts', 'tests/**/*.test.ts'],
    pool: 'forks',
    // Two cores: two files at a time keeps chDB, PGlite and the services responsive.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 30_000,
    // The browser suites start and stop the whole platform and a Chromium: slow on a loaded 2-core machine.
    hookTimeout: 120_000,
    globalSetup: ['tests/support/global-setup.ts'],
    reporters: process.env.CI ? ['default', ['json', { outputFile: process.env.VITEST_JSON ?? '.ci/results.json' }]] : ['default'],
  },
});
