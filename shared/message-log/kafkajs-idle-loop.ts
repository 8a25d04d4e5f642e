// kafkajs 2.2.4 (its last release) keeps a 1 ms timer loop running on every broker connection:
// RequestQueue.scheduleCheckPendingRequests computes `throttledUntil - Date.now()`, which is
// negative when the connection is not throttled (throttledUntil is -1), and with no request
// pending it schedules the next check with that negative delay, that is in 1 ms, forever
// (tulios/kafkajs#1556, #1704, #1751; the fixes, #1667 and #1768, were never merged). Measured on
// an idle ingest node: about 1 800 event-loop wake-ups a second and 1.8 % of a core
// (`bash bench/run.sh ingest-node`), which every process on Kafka pays, loaded or not.
//
// The check only matters while requests wait: push() and every fulfilled or timed-out request
// call it again. So with nothing pending, no check is scheduled; with requests pending it is
// scheduled exactly as kafkajs does (when the throttle ends, or in 10 ms if it has already ended:
// tulios/kafkajs#1532, a marginal throttle must not leave a request waiting).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** kafkajs's release this replacement was written against: another one needs this file read again. */
export const PATCHED_KAFKAJS_VERSION = '2.2.4';
/** kafkajs's CHECK_PENDING_REQUESTS_INTERVAL (not exported). */
const CHECK_PENDING_REQUESTS_INTERVAL = 10;

/** The fields of kafkajs's RequestQueue the scheduling reads and writes. */
export interface RequestQueueLike {
  throttledUntil: number;
  throttleCheckTimeoutId: ReturnType<typeof setTimeout> | null;
  pending: unknown[];
  checkPendingRequests(): void;
  scheduleCheckPendingRequests: (this: RequestQueueLike) => void;
}

/** The replacement of RequestQueue.prototype.scheduleCheckPendingRequests. */
export function scheduleCheckPendingRequests(this: RequestQueueLike): void {
  if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
  const untilUnthrottled = this.throttledUntil - Date.now();
  this.throttleCheckTimeoutId = setTimeout(
    () => {
      this.throttleCheckTimeoutId = null;
      this.checkPendingRequests();
    },
    untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_REQUESTS_INTERVAL,
  );
}

/** kafkajs's RequestQueue class (a CommonJS module its package does not export by name). */
export function kafkajsRequestQueue(): { prototype: RequestQueueLike } {
  return require('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueueLike };
}

/** kafkajs's own method, kept when it is replaced (its tests show the loop it had). */
export let kafkajsScheduleCheckPendingRequests: ((this: RequestQueueLike) => void) | undefined;

/**
 * Replaces the loop, once per process. Refuses another kafkajs release: the replacement reads
 * RequestQueue's private fields, and a release that fixed or moved them needs it read again.
 */
export function stopKafkajsIdleLoop(): void {
  const { version } = require('kafkajs/package.json') as { version: string };
  if (version !== PATCHED_KAFKAJS_VERSION) {
    throw new Error(`kafkajs ${version}: shared/message-log/kafkajs-idle-loop.ts was written for ${PATCHED_KAFKAJS_VERSION}; check whether it is still needed`);
  }
  const { prototype } = kafkajsRequestQueue();
  if (prototype.scheduleCheckPendingRequests === scheduleCheckPendingRequests) return;
  kafkajsScheduleCheckPendingRequests = prototype.scheduleCheckPendingRequests;
  prototype.scheduleCheckPendingRequests = scheduleCheckPendingRequests;
}
