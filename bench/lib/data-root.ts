// Where a benchmark puts the DATA_DIRs of the processes it compares (their chDB, LMDB log and edge
// journal). On this project's 2-core VMs the disk is ext4 without a journal, and there the kernel's
// inode allocator skips, one lookup each, every inode deleted in the last 5 s (305 s while its
// inode table block is dirty): chDB creates and deletes a few hundred files a second while it
// inserts and merges, so its kernel time grows with what this run and the runs before it deleted
// (`bash bench/run.sh chdb-files`: 9 to 45 µs a row, against 3.5 on tmpfs). Two processes measured
// one after the other on that disk pay differently for the same inserts.
import { accessSync, constants, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';

/** statfs's f_type of the file systems a reader should know by name. */
const FILE_SYSTEMS: Record<number, string> = { 0x01021994: 'tmpfs', 0xef53: 'ext4', 0x58465342: 'xfs', 0x9123683e: 'btrfs', 0x794c7630: 'overlayfs' };

/** The file system under `dir`, by name where known. */
export function fileSystemOf(dir: string): string {
  const type = statfsSync(dir).type;
  return FILE_SYSTEMS[type] ?? `file system 0x${type.toString(16)}`;
}

/**
 * BENCH_DATA_ROOT when set; otherwise, when `preferMemory`, /dev/shm (a tmpfs) where the machine
 * has a writable one; otherwise the OS's temporary directory.
 */
export function benchDataRoot(preferMemory: boolean): { dir: string; note: string } {
  const chosen = process.env.BENCH_DATA_ROOT;
  let dir = chosen || tmpdir();
  if (!chosen && preferMemory) {
    try {
      accessSync('/dev/shm', constants.W_OK);
      if (fileSystemOf('/dev/shm') === 'tmpfs') dir = '/dev/shm';
    } catch {
      // no writable /dev/shm: the temporary directory
    }
  }
  const why = chosen ? 'BENCH_DATA_ROOT' : dir === '/dev/shm' ? 'tmpfs by default; BENCH_DATA_ROOT=<dir> for another' : 'the temporary directory';
  return { dir, note: `every DATA_DIR under ${dir} (${fileSystemOf(dir)}; ${why})` };
}
