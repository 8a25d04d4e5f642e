/**
 * Lets the event loop run (answers to redirects, timers such as the message log's group commit) between
 * two slices of a long synchronous loop over a batch.
 */
export const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Items of a batch handled between two turns of the event loop. Enriching a visit costs about 30 µs
 * here, so a slice holds the loop for about 8 ms: a batch of 10 000 visits no longer holds it for
 * 300 ms, during which no redirect was answered and no visit answered before it reached the disk.
 */
export const SLICE = 256;
