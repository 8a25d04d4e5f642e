import { rmSync } from 'node:fs';
import type { Context } from '../../shared/context.js';
import { closeContext } from '../../shared/testing/context.js';

/**
 * Closes a benchmark's context and removes this process's chDB folder. The engine is shared by the
 * process and may still be finishing a merge in it, so the removal retries a few times.
 */
export async function closeBenchContext(context: Context | undefined): Promise<void> {
  if (!context) return;
  await closeContext(context);
  if (context.config.analytics.kind === 'chdb') rmSync(context.config.analytics.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
