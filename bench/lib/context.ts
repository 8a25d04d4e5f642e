import { rmSync } from 'node:fs';
import type { Context } from '#shared/context.js';
import { closeContext, createTestContext } from '#tests/support/context.js';

/**
 * Closes a benchmark's context and removes this process's chDB folder. The engine is shared by the
 * process and may still be finishing a merge in it, so the removal retries a few times.
 */
export async function closeBenchContext(context: Context | undefined): Promise<void> {
  if (!context) return;
  await closeContext(context);
  if (context.config.analytics.kind === 'chdb') rmSync(context.config.analytics.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}

/**
 * Runs a benchmark on a fresh test context (the overrides on top of the test configuration): prints
 * a failure, closes the context and exits the process, 1 when the benchmark threw.
 */
export async function runBench(overrides: Record<string, string>, body: (context: Context) => Promise<void>): Promise<never> {
  let context: Context | undefined;
  let failed = false;
  try {
    context = await createTestContext(overrides);
    await body(context);
  } catch (error) {
    failed = true;
    console.error('benchmark failed:', error);
  } finally {
    await closeBenchContext(context).catch(() => undefined);
  }
  process.exit(failed ? 1 : 0);
}
