/** A kind of background job and its retry policy; the same policy holds on BullMQ and in process. */
export interface JobDefinition<Data> {
  name: string;
  /** Total attempts including the first. */
  attempts: number;
  /** Base of the exponential backoff: the wait before attempt n (n ≥ 2) is base * factor^(n-2), with ±20 % jitter. */
  backoffMs: number;
  /** Growth of the backoff from one retry to the next (default 2). */
  backoffFactor?: number;
  /** Jobs of this kind processed at once by one worker process. */
  concurrency: number;
  /**
   * Most finished jobs of this kind whose ids keep deduplicating enqueues (besides their age,
   * JOB_ID_RETENTION_MS): a kind run thousands of times a second would otherwise keep millions.
   */
  retainFinished?: number;
  /** Only for typing: never read. */
  readonly _data?: Data;
}

/** Declares a job kind. */
export function defineJob<Data>(definition: Omit<JobDefinition<Data>, '_data'>): JobDefinition<Data> {
  return definition;
}

export interface JobContext {
  id: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** True when this is the last attempt the policy allows. */
  final: boolean;
}

export type JobHandler<Data> = (data: Data, context: JobContext) => Promise<void>;

/**
 * Thrown by a handler that cannot run the job now (a per-key concurrency bound is full): the job
 * is run again after `delayMs` as the same attempt (it does not count as a failure).
 */
export class DeferJob extends Error {
  constructor(readonly delayMs: number) {
    super(`job deferred by ${delayMs} ms`);
    this.name = 'DeferJob';
  }
}

export interface EnqueueOptions {
  /** A stable id makes the enqueue idempotent (a second enqueue with the same id is ignored). */
  jobId?: string;
  delayMs?: number;
}

/** The processing of one job kind in this process. */
export interface Processor {
  stop(): Promise<void>;
}

/** Background jobs: BullMQ on Redis in production, an in-process runner embedded (durable on LMDB). */
export interface Jobs {
  kind: 'lmdb' | 'bullmq';
  enqueue<Data>(definition: JobDefinition<Data>, data: Data, options?: EnqueueOptions): Promise<void>;
  /** Enqueues many jobs of one kind in one round trip (BullMQ's addBulk). */
  enqueueMany<Data>(definition: JobDefinition<Data>, jobs: { data: Data; jobId?: string }[]): Promise<void>;
  /**
   * Starts processing a job kind in this process (the worker role calls it). The processor's stop
   * takes no more jobs of the kind here and waits for its running ones; queued jobs stay queued
   * (in Redis, or in the embedded runner's store, for a processor started later).
   */
  process<Data>(definition: JobDefinition<Data>, handler: JobHandler<Data>): Promise<Processor>;
  /**
   * Enqueues a job of the kind at once and then every `everyMs`, with `data`: one schedule per kind
   * however many processes declare it (BullMQ's job scheduler in Redis, which outlives the
   * processes; a timer in process). Declared again with the same period, the schedule keeps its
   * time (a restarted worker does not run it early); with another period, it starts over at once.
   */
  repeat<Data>(definition: JobDefinition<Data>, data: Data, everyMs: number): Promise<void>;
  /** Removes the schedule of a kind (jobs already enqueued still run). */
  stopRepeating(definition: JobDefinition<unknown>): Promise<void>;
  /** Jobs of a kind ready to run and not yet started (not those waiting for a retry or a delay). */
  waiting(definition: JobDefinition<unknown>): Promise<number>;
  ping(): Promise<void>;
  /** Stops taking new jobs and waits for the running ones. */
  close(): Promise<void>;
}

/**
 * How long a finished job's id keeps deduplicating enqueues, on both backends (BullMQ keeps the job
 * record that long; the in-process runner keeps the id), within the kind's retainFinished count.
 */
export const JOB_ID_RETENTION_MS = { completed: 3_600_000, failed: 7 * 24 * 3_600_000 } as const;

/** Delay before attempt `next` (2 for the first retry): exponential with ±20 % jitter. */
export function backoffDelay(definition: Pick<JobDefinition<unknown>, 'backoffMs' | 'backoffFactor'>, next: number): number {
  const base = definition.backoffMs * (definition.backoffFactor ?? 2) ** (next - 2);
  return Math.round(base * (0.8 + Math.random() * 0.4));
}
