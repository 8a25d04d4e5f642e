import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitForOptions {
  /** Pause between two polls. */
  intervalMs?: number;
  /** What was awaited, for the timeout message. */
  message?: string;
}

/**
 * Polls `fn` until it returns a value other than undefined, null or false, and returns that value;
 * rejects once `timeoutMs` have passed (with the last error `fn` threw, if any). A bounded
 * replacement for fixed sleeps in tests that wait for something asynchronous to happen.
 */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  timeoutMs: number,
  { intervalMs = 25, message = 'condition' }: WaitForOptions = {},
): Promise<Exclude<T, undefined | null | false>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined && value !== null && value !== false) return value as Exclude<T, undefined | null | false>;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const detail = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`waitFor: ${message} not met within ${timeoutMs} ms${detail}`, { cause: lastError });
    }
    await sleep(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
}
