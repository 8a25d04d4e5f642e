import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * Lowers this process's CPU scheduling priority to the nice value `nice` (never raises it: an
 * unprivileged process may not). Linux keeps a nice value per thread and a thread takes its
 * creator's, so every thread already running (V8's helpers, libuv's pool) is set too, not only the
 * main one; the threads started later inherit it. Returns the nice value in force.
 */
export function lowerPriority(nice: number): number {
  const current = getPriority(0);
  if (nice <= current) return current;
  setPriority(0, nice);
  if (process.platform === 'linux') {
    let threads: string[] = [];
    try {
      threads = readdirSync('/proc/self/task');
    } catch {
      // no procfs: the main thread's priority is set, which is what the event loop runs on
    }
    for (const thread of threads) {
      try {
        if (getPriority(Number(thread)) < nice) setPriority(Number(thread), nice);
      } catch {
        // a thread that ended meanwhile
      }
    }
  }
  return getPriority(0);
}
