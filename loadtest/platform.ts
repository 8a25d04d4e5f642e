// The platform under load: the one BASE_URL names, or one started here as `make run` starts it —
// `node dist/services/main.js`, every role in one process on the embedded stores — on a free
// loopback port with a data folder of its own, stopped (SIGTERM) at the end whatever happened.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '#shared/paths.js';
import { client, freePort, killAll, startProcess, waitHealthy, type Started } from '#tests/support/platform-process.js';
import type { Settings } from './settings.js';

export interface Platform {
  base: string;
  admin: { email: string; password: string };
  /** What the platform started here printed (empty for BASE_URL). */
  output(): string;
  stop(): Promise<void>;
}

/** A generous rate limit: one client on one address must measure the server, not the limiter. */
const LIFTED = '1000000000:60';

/** Waits for a process's exit, at most `ms`; true when it exited. */
const exitedWithin = (server: Started, ms: number) =>
  Promise.race([server.exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);

export async function startPlatform(settings: Settings): Promise<Platform> {
  if (settings.baseUrl) {
    const health = await client(settings.baseUrl)('GET', '/api/v1/health').catch((error: Error) => {
      throw new Error(`BASE_URL ${settings.baseUrl} does not answer: ${error.message}`);
    });
    if (health.status !== 200) throw new Error(`BASE_URL ${settings.baseUrl}: health answers ${health.status} ${JSON.stringify(health.json)}`);
    return { base: settings.baseUrl, admin: settings.admin!, output: () => '', stop: async () => {} };
  }

  const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-loadtest-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const admin = { email: 'loadtest@example.com', password: randomBytes(18).toString('base64url') };
  const server = startProcess(
    {
      // The embedded stores whatever the shell has set (a services run leaves their URLs behind).
      DATABASE_URL: '',
      CLICKHOUSE_URL: '',
      KAFKA_BROKERS: '',
      REDIS_URL: '',
      SECRETS_KEY: '',
      SECRETS_KEY_PREVIOUS: '',
      NODE_ENV: 'production',
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: base,
      BASE_DOMAIN: settings.baseDomain,
      LOG_LEVEL: 'warn',
      ADMIN_EMAIL: admin.email,
      ADMIN_PASSWORD: admin.password,
      RATE_LIMIT_REDIRECT: LIFTED,
      RATE_LIMIT_TRACK: LIFTED,
      RATE_LIMIT_API: LIFTED,
      RATE_LIMIT_DEFAULT: LIFTED,
      // One address and one user agent make every visit: burst detection would file them as bots.
      BURST_MAX_VISITS: '0',
    },
    [join(PROJECT_ROOT, 'dist/services/main.js')],
  );
  const stop = async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGTERM');
      if (!(await exitedWithin(server, 30_000))) {
        console.error('the platform did not stop within 30 s of SIGTERM: killed');
        killAll();
        await exitedWithin(server, 5_000);
      }
    }
    rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  };
  try {
    await waitHealthy(server, { timeoutMs: 120_000 });
  } catch (error) {
    await stop();
    throw error;
  }
  const output = () => {
    const { exitCode, signalCode } = server.child;
    return exitCode === null && signalCode === null ? server.output() : `${server.output()}[the platform exited: ${exitCode ?? signalCode}]\n`;
  };
  return { base, admin, output, stop };
}
