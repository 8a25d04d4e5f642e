// The /proc accounting and the topic check that bench/platform.ts and bench/cluster.ts report
// with: read off this test's own process (real /proc), and Kafka's own tool's output format.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { cpuOf, cpuOfStat, memoryOf, threadKinds, threadsOf, threadsPer } from '#bench/lib/proc.js';
import { partitionCounts } from '#bench/lib/services.js';

/** A /proc/<pid>/stat line: pid, (comm), state, then fields; utime and stime are fields 14 and 15. */
const stat = (comm: string, utime: number, stime: number) => `4242 (${comm}) S 1 2 3 4 5 6 7 8 9 10 ${utime} ${stime} 0 0 20 0 12 0 100`;

describe('CPU accounting from /proc', () => {
  it('reads user and system time after the command, even one with spaces and parentheses in it', () => {
    const line = stat('odd (name) 2', 150, 25);
    expect(cpuOfStat(line, 'user')).toBe(1_500_000);
    expect(cpuOfStat(line, 'system')).toBe(250_000);
    expect(cpuOfStat(line)).toBe(1_750_000);
  });

  it("splits this process's CPU by thread: the event loop's own time grows with work done on it", () => {
    // The whole process read first and last: its span holds the threads' span (read the other way
    // round, a clock tick between the two readings made the process's figure one tick smaller).
    const cpuBefore = cpuOf(process.pid);
    const before = threadsOf(process.pid);
    // Spun until the process has had 300 ms of CPU, not for 300 ms of the clock: a loaded machine
    // (a load average of 14 on 2 cores once) gave a 300 ms wall-clock spin 70 ms of a core.
    const cpuStart = process.cpuUsage();
    const deadline = Date.now() + 20_000;
    let spin = 0;
    while (process.cpuUsage(cpuStart).user < 300_000 && Date.now() < deadline) for (let i = 0; i < 10_000; i++) spin += Math.sqrt(spin + 1);
    expect(spin).toBeGreaterThan(0);
    const after = threadsOf(process.pid);
    const per = threadsPer(before, after, 1);
    const loop = per.find(([name]) => name === 'event loop (user)')?.[1] ?? 0;
    // 300 ms of CPU spinning on the event loop (ticks of 10 ms; other threads of the process took some of it).
    expect(loop).toBeGreaterThanOrEqual(100_000);
    // Up to one tick short: the kernel rounds the process's time and each thread's to ticks on its
    // own, so two readings of each can differ by one tick (CI once saw 300 000 µs against 310 000).
    expect(cpuOf(process.pid) - cpuBefore).toBeGreaterThanOrEqual(loop - 10_000);
    expect(threadKinds(per)['event loop']).toBeGreaterThanOrEqual(loop);
  });

  it("counts a worker thread's time under Node's helpers, not the event loop", async () => {
    const before = threadsOf(process.pid);
    const worker = new Worker('const until = Date.now() + 10_000; let x = 0; while (Date.now() < until) x += Math.sqrt(x + 1);', { eval: true });
    try {
      // Read while it runs (a thread that ended takes its time out of /proc/<pid>/task), until it has had 50 ms of a core.
      const deadline = Date.now() + 8_000;
      let threads: [string, number][] = [];
      let kinds = threadKinds(threads);
      while (kinds.helpers < 50_000 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        threads = threadsPer(before, threadsOf(process.pid), 1);
        kinds = threadKinds(threads);
      }
      expect(kinds.helpers).toBeGreaterThanOrEqual(50_000);
      // The worker's time is not filed elsewhere. A loaded CI machine once gave another thread of the
      // test process a clock tick (10 ms) in the span: a tick is not the worker's 50 ms and more.
      expect(kinds.ClickHouse, JSON.stringify(threads)).toBeLessThan(kinds.helpers / 2);
    } finally {
      await worker.terminate();
    }
  });

  it("files threads by kind: the event loop's two parts, Node's threads, and every other (chDB's) thread", () => {
    const kinds = threadKinds([
      ['event loop (user)', 20],
      ['event loop (kernel)', 5],
      ['node helpers', 7],
      ['libuv-worker', 1],
      ['ThreadPool', 12],
      ['MergeMutate', 3],
    ]);
    expect(kinds).toEqual({ 'event loop': 25, helpers: 8, ClickHouse: 15 });
  });

  it('gives CPU per unit between two readings, largest first, leaving out what rounds to nothing', () => {
    const before = new Map([
      ['a', 100],
      ['b', 50],
    ]);
    const after = new Map([
      ['a', 300],
      ['b', 50.01],
      ['c', 1_000],
    ]);
    expect(threadsPer(before, after, 10)).toEqual([
      ['c', 100],
      ['a', 20],
    ]);
  });

  it("reads this process's resident memory and its peak", () => {
    expect(memoryOf(process.pid, 'VmRSS')).toBeGreaterThan(10);
    expect(memoryOf(process.pid, 'VmHWM')).toBeGreaterThanOrEqual(memoryOf(process.pid, 'VmRSS') - 1);
  });
});

describe("the topics' partition counts", () => {
  it("reads kafka-topics.sh --describe's topic lines and skips its partition lines", () => {
    const described = [
      'Topic: run1.visits.raw\tTopicId: nxp-xelaSDuh_ijf5yWIBg\tPartitionCount: 6\tReplicationFactor: 1\tConfigs: segment.bytes=104857600',
      '\tTopic: run1.visits.raw\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: ',
      'Topic: run1.events\tTopicId: Xq2\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: ',
      '\tTopic: run1.events\tPartition: 2\tLeader: 1\tReplicas: 1\tIsr: 1',
    ].join('\n');
    expect([...partitionCounts(described)]).toEqual([
      ['run1.visits.raw', 6],
      ['run1.events', 3],
    ]);
  });
});
