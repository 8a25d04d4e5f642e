import { statfsSync } from 'node:fs';

/** Thrown by a durable embedded store refusing a write while its disk is nearly full. */
export class DiskFullError extends Error {
  constructor(
    readonly dir: string,
    readonly freeBytes: number,
    readonly minFreeBytes: number,
  ) {
    super(
      `the disk of ${dir} has ${Math.floor(freeBytes / 1_048_576)} MiB free, under the ${Math.floor(minFreeBytes / 1_048_576)} MiB DISK_MIN_FREE_MB keeps free: new messages are refused until there is room`,
    );
    this.name = 'DiskFullError';
  }
}

/** How long a reading of the free space is used (a statfs costs a few µs; a publish happens every few ms). */
const REFRESH_MS = 100;

/**
 * Keeps a durable embedded store (the message log, the job queue on LMDB) off a full disk: new writes
 * are refused while the file system of `dir` has less than `minFreeBytes` available, so the store
 * never meets ENOSPC itself. (lmdb-js 3.5.6 meeting a full disk rejects commits and, after a few,
 * aborts the process: tried here on a 1 MiB tmpfs.) Deletions and offset commits still go through:
 * they need only the room the reserve keeps.
 */
export function diskGuard(dir: string, minFreeBytes: number) {
  let checkedAt = -Infinity;
  let free = Infinity;
  return {
    /** Throws DiskFullError while the disk is under the reserve. */
    check(): void {
      const now = performance.now();
      if (now - checkedAt >= REFRESH_MS) {
        const stats = statfsSync(dir);
        free = stats.bavail * stats.bsize;
        checkedAt = now;
      }
      if (free < minFreeBytes) throw new DiskFullError(dir, free, minFreeBytes);
    },
  };
}
