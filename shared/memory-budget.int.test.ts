// The memory budget's cgroup detection against the kernel's own files: a process started in a real
// cgroup with a memory limit (as `bash bench/run.sh small-server` and a systemd unit place the
// platform) finds that limit. Creating a cgroup needs root and a writable memory hierarchy (v2 with
// the memory controller, or v1's); without them the test is skipped, and its name says so.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from './paths.js';

/** A writable memory cgroup folder below this process's own (v2 when it has the memory controller, else v1), or undefined. */
function memoryHierarchy(): { parent: string; limitFile: string } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const membership = readFileSync('/proc/self/cgroup', 'utf8');
  const v1 = /^\d+:[^:]*\bmemory\b[^:]*:(.*)$/m.exec(membership)?.[1];
  if (v1 !== undefined && existsSync('/sys/fs/cgroup/memory/memory.limit_in_bytes'))
    return { parent: join('/sys/fs/cgroup/memory', v1), limitFile: 'memory.limit_in_bytes' };
  const v2 = /^0::(.*)$/m.exec(membership)?.[1];
  if (
    v2 !== undefined &&
    existsSync('/sys/fs/cgroup/cgroup.controllers') &&
    readFileSync(join('/sys/fs/cgroup', v2, 'cgroup.subtree_control'), 'utf8').includes('memory')
  )
    return { parent: join('/sys/fs/cgroup', v2), limitFile: 'memory.max' };
  return undefined;
}
const hierarchy = memoryHierarchy();

describe.skipIf(!hierarchy)('cgroup memory limit (real cgroup; skipped without root and a writable memory hierarchy)', () => {
  it("a process in a cgroup limited to 700 MiB takes that limit as its budget's", () => {
    const dir = join(hierarchy!.parent, `linktrack-test-${process.pid}`);
    mkdirSync(dir);
    try {
      writeFileSync(join(dir, hierarchy!.limitFile), String(700 * 1_048_576));
      // The shell joins the cgroup, then becomes node: the process reads its limit from inside it.
      const script = `import { resolveMemoryLimit } from './shared/memory-budget.ts'; console.log(JSON.stringify(resolveMemoryLimit(undefined)));`;
      const child = spawnSync(
        'sh',
        ['-c', `echo $$ > "$0/cgroup.procs" && exec "$@"`, dir, process.execPath, '--import', 'tsx', '--input-type=module', '-e', script],
        {
          cwd: PROJECT_ROOT,
          encoding: 'utf8',
        },
      );
      expect(child.stderr).toBe('');
      expect(JSON.parse(child.stdout)).toEqual({ limitMb: 700, source: 'cgroup' });
    } finally {
      rmdirSync(dir);
    }
  });

  it('a process outside any limited cgroup falls back to the default', () => {
    const script = `import { resolveMemoryLimit } from './shared/memory-budget.ts'; console.log(JSON.stringify(resolveMemoryLimit(undefined)));`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: PROJECT_ROOT, encoding: 'utf8' });
    expect(JSON.parse(child.stdout)).toMatchObject({ source: 'default' });
  });
});
