import type { Topic } from './topics.js';

/** One message of the visit log: partitioned by key (the link id for visits), value is JSON text. */
export interface LogMessage {
  key: string;
  value: string;
  headers?: Record<string, string>;
}

/**
 * Consumes batches of one topic in a consumer group. The handler resolving means the batch is
 * durable: only then are offsets committed. A thrown error leaves the batch to be redelivered.
 */
export interface ConsumeOptions {
  groupId: string;
  topic: Topic;
  maxBatch?: number;
  /**
   * Longest wait for a batch to fill up to maxBatch once its first message is there (0: deliver
   * what is there at once). Kafka: the broker holds the fetch up to this long for about a MiB.
   */
  maxWaitMs?: number;
  handler: (messages: LogMessage[]) => Promise<void>;
}

export interface Consumer {
  stop(): Promise<void>;
}

/** The visit log: Kafka in production, a bounded in-process log with the same semantics embedded. */
export interface VisitLog {
  kind: 'memory' | 'kafka';
  publish(topic: Topic, messages: LogMessage[]): Promise<void>;
  consume(options: ConsumeOptions): Promise<Consumer>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Thrown when the in-process log is full: the caller counts it, never drops silently. */
export class VisitLogFullError extends Error {
  constructor(topic: string, capacity: number) {
    super(`visit log topic ${topic} is full (${capacity} messages waiting)`);
    this.name = 'VisitLogFullError';
  }
}
