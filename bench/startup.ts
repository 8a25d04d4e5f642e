// Measures the one-process mode as `make run` starts it (built JS): time from spawn to a healthy
// /api/v1/health on a fresh data dir and on a warm one, and resident memory at idle.
//   make build && bash bench/run.sh startup [runs]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const runs = Number(process.argv[2] ?? 3);
const port = 18080;
const entry = join(import.meta.dirname, '..', 'dist', 'services', 'main.js');

async function startOnce(dataDir: string, measureRss: boolean): Promise<{ healthyMs: number; rssMiB?: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [entry], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
      REDIS_URL: '',
      KAFKA_BROKERS: '',
      CLICKHOUSE_URL: '',
    },
    stdio: 'ignore',
  });
  try {
    for (;;) {
      if (performance.now() - started > 60_000) throw new Error('not healthy within 60 s');
      try {
        const response = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
        if (response.status === 200) break;
      } catch {
        // not yet listening
      }
      await sleep(20);
    }
    const healthyMs = performance.now() - started;
    let rssMiB: number | undefined;
    if (measureRss) {
      await sleep(5_000);
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      rssMiB = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
    }
    return { healthyMs, rssMiB };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

const fresh: number[] = [];
const warm: number[] = [];
const rss: number[] = [];
for (let run = 0; run < runs; run++) {
  const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-bench-'));
  fresh.push((await startOnce(dataDir, false)).healthyMs);
  const second = await startOnce(dataDir, true);
  warm.push(second.healthyMs);
  rss.push(second.rssMiB!);
  rmSync(dataDir, { recursive: true, force: true });
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const show = (values: number[], unit: string) => `median ${median(values).toFixed(0)} ${unit} (runs: ${values.map((v) => v.toFixed(0)).join(', ')})`;
console.log(`start to healthy, fresh data dir: ${show(fresh, 'ms')}`);
console.log(`start to healthy, warm data dir:  ${show(warm, 'ms')}`);
console.log(`resident memory at idle (5 s after healthy): ${show(rss, 'MiB')}`);
