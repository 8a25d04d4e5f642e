import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from '#shared/db/database.js';
import { PROJECT_ROOT } from '#shared/paths.js';
import { keyId, parseKey } from '#shared/secrets/secret-box.js';
import { freePort } from './support/platform-process.js';

/** The process as `make run` starts it, from source; embedded whatever the suite's mode. */
const EMBEDDED = { DATABASE_URL: '', REDIS_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', SECRETS_KEY: '', SECRETS_KEY_PREVIOUS: '', LOG_LEVEL: 'warn' };

interface Started {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function start(env: Record<string, string>): Started {
  const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'services/main.ts')], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Runs `body` on the PGlite store of a stopped platform's data dir. */
async function withStore<T>(dataDir: string, body: (db: Database['db']) => Promise<T>): Promise<T> {
  const database = await createDatabase({ kind: 'pglite', dir: join(dataDir, 'pg') });
  try {
    return await body(database.db);
  } finally {
    await database.close();
  }
}

async function waitHealthy(port: number, process: Started, timeoutMs = 45_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (process.child.exitCode !== null) throw new Error(`exited ${process.child.exitCode}: ${process.stderr()}`);
    try {
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
      if (response.status === 200) return await response.json();
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`not healthy within ${timeoutMs} ms: ${process.stderr()}`);
}

describe('the one-process platform', () => {
  it('a bad configuration value stops start-up with one line naming the variable and the rule', async () => {
    const started = start({ ...EMBEDDED, PORT: 'eighty' });
    expect(await started.exited).toBe(1);
    expect(started.stderr()).toBe('invalid configuration: PORT must be an integer from 1 to 65535 (got "eighty")\n');
  });

  it('starts on a fresh data dir, prints the admin password once, is healthy, drains on SIGTERM, restarts warm', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-platform-'));
    const port = await freePort();
    const env = { ...EMBEDDED, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', ADMIN_EMAIL: '', ADMIN_PASSWORD: '' };

    const first = start(env);
    const health = await waitHealthy(port, first);
    expect(health.ok).toBe(true);
    expect(Object.values<{ status: string }>(health.data.checks).every((check) => check.status === 'ok')).toBe(true);
    expect(first.stdout()).toMatch(/Generated password \(shown once\): [A-Za-z0-9_-]{24}/);
    // The line may reach the pipe after the first health answer (the services CI run once read it too early).
    await expect.poll(() => first.stdout(), { timeout: 5_000 }).toContain(`listening on http://127.0.0.1:${port}`);
    // All roles in one process: the worker's priority setting does not apply.
    expect(getPriority(first.child.pid)).toBe(getPriority(0));
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    // Without SECRETS_KEY the first start generated the key of the secrets at rest, for its owner only.
    const keyFile = join(dataDir, 'secrets.key');
    const key = readFileSync(keyFile, 'utf8');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    // A webhook as the schema before encryption at rest left it: its secret in plaintext.
    const secret = `whsec_${'p'.repeat(43)}`;
    const webhookId = await withStore(dataDir, async (db) => {
      const owner = await db.selectFrom('users').select('id').executeTakeFirstOrThrow();
      const row = await db
        .insertInto('webhooks')
        .values({ owner_id: owner.id, url: 'https://receiver.example/hook', events: ['link.created'], secret, secret_prefix: secret.slice(0, 12) })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    });

    const second = start(env);
    await waitHealthy(port, second);
    expect(second.stdout()).not.toContain('Generated password');
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    // The restart reused the key and sealed the plaintext secret with it.
    expect(readFileSync(keyFile, 'utf8')).toBe(key);
    const stored = await withStore(
      dataDir,
      async (db) => (await db.selectFrom('webhooks').select('secret').where('id', '=', webhookId).executeTakeFirstOrThrow()).secret,
    );
    expect(stored).not.toContain('pppppppp');
    expect(stored.startsWith(`v1:${keyId(parseKey(key)!)}:`)).toBe(true);
  }, 120_000);

  it.runIf(process.platform === 'linux')(
    'a process of the worker role alone lowers every thread to WORKER_NICE',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-platform-'));
      const port = await freePort();
      const base = getPriority(0);
      const nice = Math.min(19, base + 7);
      const worker = start({ ...EMBEDDED, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', SERVICE_ROLES: 'worker', WORKER_NICE: String(nice) });
      // Niced, it starts last on a busy machine (a CI run with a load average of 14 took over 45 s).
      await waitHealthy(port, worker, 150_000);
      const pid = worker.child.pid!;
      expect(getPriority(pid)).toBe(nice);
      // Node's own threads (V8's helpers, libuv's pool) carry the process name; field 19 of their stat
      // (counted from the name's closing parenthesis) is the thread's nice value. (chDB's engine names
      // its threads and sets some priorities itself.)
      const threads = readdirSync(`/proc/${pid}/task`)
        .map((tid) => readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'))
        .filter((stat) => stat.includes('(node)'))
        .map((stat) => Number(stat.split(') ')[1]!.split(' ')[16]));
      expect(threads.length).toBeGreaterThan(4);
      expect(new Set(threads)).toEqual(new Set([nice]));
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    },
    180_000,
  );
});
