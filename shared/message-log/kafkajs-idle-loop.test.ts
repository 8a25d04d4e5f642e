import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import {
  kafkajsRequestQueue,
  kafkajsScheduleCheckPendingRequests,
  PATCHED_KAFKAJS_VERSION,
  scheduleCheckPendingRequests,
  type RequestQueueLike,
} from './kafkajs-idle-loop.js';
// Loading the Kafka log replaces the loop, as every process on Kafka does.
import './kafka.js';

const require = createRequire(import.meta.url);
type RequestQueue = RequestQueueLike & { destroy(): void; push(request: unknown): void; maybeThrottle(ms: number): void; inflight: Map<number, unknown> };
const RequestQueueClass = kafkajsRequestQueue() as unknown as new (options: Record<string, unknown>) => RequestQueue;
const quietLogger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

const queues: RequestQueue[] = [];
function requestQueue(): RequestQueue {
  const queue = new RequestQueueClass({
    maxInFlightRequests: 1,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: 'b:9092',
    logger: quietLogger,
  });
  queues.push(queue);
  return queue;
}
afterEach(() => queues.splice(0).forEach((queue) => queue.destroy()));

/** A request as the connection pushes it: sent (recorded) when the queue lets it go. */
function pushed(correlationId: number, sent: number[]) {
  return { entry: { correlationId, apiKey: 0, apiName: 'Produce', apiVersion: 7 }, expectResponse: true, sendRequest: () => sent.push(correlationId) };
}

describe("kafkajs's RequestQueue without its 1 ms idle loop (kafkajs-idle-loop.ts)", () => {
  it('is the kafkajs release the replacement was written for, and that release is what the Kafka log runs', () => {
    expect((require('kafkajs/package.json') as { version: string }).version).toBe(PATCHED_KAFKAJS_VERSION);
    expect(kafkajsRequestQueue().prototype.scheduleCheckPendingRequests).toBe(scheduleCheckPendingRequests);
  });

  it('schedules no check when nothing is pending (kafkajs 2.2.4 scheduled one in 1 ms, after every response, forever)', () => {
    const queue = requestQueue();
    // What every fulfilled request ends with.
    queue.checkPendingRequests();
    expect(queue.throttleCheckTimeoutId).toBeNull();
  });

  it("kafkajs's own method, on the same queue, does keep a check scheduled with nothing pending: the loop replaced", () => {
    const queue = requestQueue();
    kafkajsScheduleCheckPendingRequests!.call(queue);
    expect(queue.throttleCheckTimeoutId).not.toBeNull();
  });

  it('still sends a request that waits on a client-side throttle once the throttle ends', async () => {
    const queue = requestQueue();
    const sent: number[] = [];
    queue.maybeThrottle(30);
    queue.push(pushed(1, sent));
    expect(sent).toEqual([]);
    expect(queue.throttleCheckTimeoutId).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(sent).toEqual([1]);
    // Nothing pending any more: no further check is kept scheduled.
    expect(queue.throttleCheckTimeoutId).toBeNull();
  });

  it('sends a request that waited for an in-flight slot when the slot frees, and checks again in 10 ms after a throttle that has already ended (tulios/kafkajs#1532)', async () => {
    const queue = requestQueue();
    const sent: number[] = [];
    queue.push(pushed(1, sent));
    queue.push(pushed(2, sent)); // maxInFlightRequests 1: waits
    expect(sent).toEqual([1]);
    // A marginal throttle, already over when the check is scheduled: the check still comes.
    queue.throttledUntil = Date.now() - 1;
    queue.throttleCheckTimeoutId = null;
    queue.inflight.clear();
    queue.scheduleCheckPendingRequests();
    expect(queue.throttleCheckTimeoutId).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(sent).toEqual([1, 2]);
  });
});
