import { defineJob } from '../jobs/jobs.js';

/** The job that runs an import (issue 39): one attempt after another from its last checkpoint; the data is the import's id. */
export const importJob = defineJob<{ id: string }>({ name: 'import.run', attempts: 5, backoffMs: 5_000, concurrency: 2 });

/**
 * Runs the import `id` from its last checkpoint (the api role's import engine, handed to the worker
 * role by the composition root): `final` on the job's last attempt; `stopping` says the worker is
 * shutting down (the run checkpoints and defers itself).
 */
export type ImportRunner = (id: string, options: { final: boolean; stopping: () => boolean }) => Promise<void>;
