// Where a benchmark puts the DATA_DIRs of the processes it compares (their chDB, LMDB log and edge
// journal). On this project's 2-core VMs the disk is ext4 without a journal, and there the kernel's
// inode allocator skips, one lookup each, every inode deleted in the last 60 s (360 s while its
// inode table block is dirty; Linux 5.7 and later): chDB creates and deletes a few hundred files a
// second while it inserts and merges, so its kernel time grows with what this run and the runs
// before it deleted (`bash bench/run.sh chdb-files`: chDB's threads spent 9 to 43 µs a row in the
// kernel, against 3.5 to 4 on tmpfs). Two processes measured one after the other on that disk pay
// differently for the same inserts.
import { accessSync, constants, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';

/** statfs's f_type of the file systems a reader should know by name. */
const FILE_SYSTEMS: Record<number, string> = { 0x01021994: 'tmpfs', 0xef53: 'ext2/3/4', 0x58465342: 'xfs', 0x9123683e: 'btrfs', 0x794c7630: 'overlayfs' };

/** The file system under `dir`, by name where known. */
export function fileSystemOf(dir: string): string {
  const type = statfsSync(dir).type;
  return FILE_SYSTEMS[type] ?? `file system 0x${type.toString(16)}`;
}

/** The least free space a tmpfs must have to hold a benchmark's DATA_DIRs (a container's /dev/shm is often 64 MiB). */
const MIN_FREE_BYTES = 2 * 1024 ** 3;

/**
 * BENCH_DATA_ROOT when set; otherwise /dev/shm where the machine has a writable tmpfs there with at
 * least 2 GiB free; otherwise the OS's temporary directory.
 */
export function benchDataRoot(): { dir: string; note: string } {
  const chosen = process.env.BENCH_DATA_ROOT;
  let dir = chosen || tmpdir();
  if (!chosen) {
    try {
      accessSync('/dev/shm', constants.W_OK);
      const { bavail, bsize } = statfsSync('/dev/shm');
      if (fileSystemOf('/dev/shm') === 'tmpfs' && bavail * bsize >= MIN_FREE_BYTES) dir = '/dev/shm';
    } catch {
      // no writable /dev/shm: the temporary directory
    }
  }
  const why = chosen
    ? 'BENCH_DATA_ROOT'
    : dir === '/dev/shm'
      ? 'tmpfs by default; BENCH_DATA_ROOT=<dir> for another'
      : 'the temporary directory: no writable tmpfs with 2 GiB free at /dev/shm';
  return { dir, note: `every DATA_DIR under ${dir} (${fileSystemOf(dir)}; ${why})` };
}
