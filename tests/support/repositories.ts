import type { Context } from '#shared/context.js';
import { createRepositories, type Repositories } from '#services/repositories.js';

/**
 * A test context with its repositories, built from its clients as a composition root builds them:
 * what a role function that takes `{ repositories }` beside slices of the context is handed. Its own
 * module, not tests/support/context.ts: tests of shared/ use that one, and shared/ reaches no
 * service code, not even through a test helper.
 */
export function withRepositories<C extends Pick<Context, 'db' | 'analytics'>>(context: C): C & { repositories: Repositories } {
  return { ...context, repositories: createRepositories(context) };
}
