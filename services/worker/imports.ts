import type { Context } from '#shared/context.js';
import { importJob, type ImportRunner } from '#shared/imports/import-job.js';
import type { Consumer } from '#shared/message-log/message-log.js';

/**
 * The import side of the worker role: runs the import jobs POST /api/v1/imports queues (issue 39)
 * with the import engine the composition root hands it. On stop, a running import checkpoints after
 * its row in flight and is deferred, so that a shutdown does not wait for a long import (the next
 * run, here or in another worker, goes on from there).
 */
export async function startImports(context: Pick<Context, 'jobs'>, run: ImportRunner): Promise<Consumer> {
  let stopped = false;
  const processor = await context.jobs.process(importJob, async ({ id }, { final }) => run(id, { final, stopping: () => stopped }));
  return {
    async stop() {
      stopped = true;
      await processor.stop();
    },
  };
}
