import { retryLater } from '../errors.js';

/**
 * Expensive work an account may have running at once, per process: PNG QR codes (rendered by the
 * worker pool) and XLSX or PDF exports (built on the event loop as they stream). One account cannot
 * fill the pool's queue or this process's event loop, so others' requests and the redirect path do
 * not wait behind its work.
 */
export const IN_FLIGHT_LIMITS = {
  qr_png: { max: 4, retryAfterSec: 1 },
  export: { max: 2, retryAfterSec: 5 },
} as const satisfies Record<string, { max: number; retryAfterSec: number }>;

export type InFlightWork = keyof typeof IN_FLIGHT_LIMITS;

/** The `details.reason` of a 429 answered by this guard (not a rate bucket: no window, nothing to count down). */
export const IN_FLIGHT_REASON = 'too_many_in_flight';
/** `details.reason` of a 429 for a render queue at its limit (services/api/links/qr.ts). */
export const RENDERER_BUSY_REASON = 'qr_renderer_busy';
/** The reasons of 429s for work in flight rather than a rate bucket's window. */
export const IN_FLIGHT_REASONS: ReadonlySet<string> = new Set([IN_FLIGHT_REASON, RENDERER_BUSY_REASON]);

/** Counts each account's work in flight, per kind. */
export interface InFlightGuard {
  /**
   * Takes a slot of `work` for `account`, or throws 429 `rate_limited` (`details.reason`
   * too_many_in_flight, with `work` and `limit`; Retry-After the kind's hint) when all are taken.
   * Returns the release, which may be called any number of times (only the first counts).
   */
  acquire(work: InFlightWork, account: string): () => void;
  /** Slots of `work` that `account` holds now. */
  held(work: InFlightWork, account: string): number;
}

/**
 * An in-flight guard of this process. Per process on purpose: what it protects (this process's event
 * loop and render threads) is per process, and a count shared through Redis would outlive a crashed
 * process's slots. With N api processes an account may run N times the limit, each process at most once.
 */
export function createInFlightGuard(limits: Record<InFlightWork, { max: number; retryAfterSec: number }> = IN_FLIGHT_LIMITS): InFlightGuard {
  const counts = new Map<string, number>();
  return {
    acquire(work, account) {
      const key = `${work}\u0000${account}`;
      const count = counts.get(key) ?? 0;
      const { max, retryAfterSec } = limits[work];
      if (count >= max) throw retryLater('rate_limited', retryAfterSec, { reason: IN_FLIGHT_REASON, work, limit: max });
      counts.set(key, count + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (counts.get(key) ?? 1) - 1;
        if (left > 0) counts.set(key, left);
        else counts.delete(key);
      };
    },
    held: (work, account) => counts.get(`${work}\u0000${account}`) ?? 0,
  };
}
