import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { ConfigError, loadConfig, type Config, type Role } from '#shared/config.js';
import type { Server } from 'node:net';
import type { BackupDeps } from '#shared/backup/backup.js';
import { closeContext, createProcessContext, type Context, type ProcessContext } from '#shared/context.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { buildApp } from './app.js';
import { composition } from './repositories.js';
import { lowerPriority } from './worker/priority.js';

export interface Platform {
  /** A Context with the analytics store when a role of the process reads or writes visits (api, enricher), else a ThinContext. */
  context: ProcessContext;
  app: FastifyInstance;
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts the roles of one process: migrations, webhook secrets sealed with the current key,
 * first-run admin, the role runtimes, and the HTTP server (every process serves /api/v1/health
 * and /metrics; api and ingest serve their routes). Only what the roles use is opened and loaded: a
 * process without the api and enricher roles (an ingest node, a worker) opens no analytics store and
 * runs no ClickHouse migration, and each role's modules are imported only by a process that runs it.
 */
export async function startPlatform(config: Config): Promise<Platform> {
  const context = await createProcessContext(config);
  // The process's one set of repositories, handed to each role it runs: the ClickHouse ones only with the analytics store.
  const composed = composition(context);
  const { repositories } = composed;
  const { log } = context;
  const has = (role: Role) => config.roles.includes(role);
  try {
    const applied = await migrateDatabase(context.db);
    if (context.analytics) {
      const { migrateAnalytics } = await import('#shared/migrations/clickhouse.js');
      applied.push(...(await migrateAnalytics(context.analytics)));
    }
    if (applied.length > 0) log.info({ applied }, 'migrations applied');
    if (has('api') || has('worker')) {
      // Plaintext secrets from before encryption at rest, and secrets sealed with a previous key
      // (a rotation), are sealed with the current key; the other nodes' caches drop the old values.
      const [{ sealWebhookSecrets }, { WEBHOOKS_VERSION_KEY }] = await Promise.all([
        import('#shared/webhooks/secrets.js'),
        import('#shared/webhooks/delivery.js'),
      ]);
      const { sealed } = await sealWebhookSecrets(repositories, context.secrets, log);
      if (sealed > 0) await context.cache.bump(WEBHOOKS_VERSION_KEY);
    }
    if (has('api')) {
      // TOTP secrets (issue 36) are opened only by the api role: it re-seals those of a previous key.
      const { sealTotpSecrets } = await import('./api/auth/totp.service.js');
      await sealTotpSecrets(repositories, context.secrets, log);
    }
    if (has('api')) {
      const { bootstrapAdmin } = await import('./api/users/bootstrap.js');
      const admin = await bootstrapAdmin({ config, repositories });
      if (admin.created) {
        log.info({ email: admin.email }, 'first-run staff admin created');
        if (admin.generatedPassword) {
          // Printed once, on purpose outside the JSON log: the operator must copy it now.
          process.stdout.write(`\nFirst-run staff admin: ${admin.email}\nGenerated password (shown once): ${admin.generatedPassword}\n\n`);
        }
      }
    }
  } catch (error) {
    await closeContext(context);
    throw error;
  }

  const consumers: Consumer[] = [];
  /** Stops the enricher after its batch in flight and returns what starts it again (a backup's pause). */
  let pauseEnricher: (() => Promise<() => Promise<void>>) | undefined;
  if (has('enricher') || has('worker')) {
    // One cache of webhooks for the enricher (which visits raise events) and the worker (where they go).
    const { webhookCache } = await import('#shared/webhooks/subscriptions.js');
    const subscriptions = webhookCache({ webhooks: repositories.webhooks, cache: context.cache });
    if (has('enricher')) {
      if (composed.kind !== 'full') throw new Error('the enricher role runs without the analytics store (ANALYTICS_ROLES must list it)');
      const { startVisitConsumer } = await import('./enricher/visit-consumer.js');
      const start = () => startVisitConsumer(composed.context, composed.repositories, subscriptions);
      consumers.push(await start());
      const slot = consumers.length - 1;
      pauseEnricher = async () => {
        await consumers[slot]!.stop();
        return async () => void (consumers[slot] = await start());
      };
    }
    if (has('worker')) {
      const [{ startWorker }, { importRunner }] = await Promise.all([import('./worker/worker.js'), import('./api/imports/imports.service.js')]);
      consumers.push(await startWorker(context, repositories, subscriptions, importRunner({ ...context, repositories })));
    }
  }

  const { app, settled } = await buildApp(context, { repositories });
  await app.listen({ port: config.port, host: config.host });
  // The one-process platform takes its own backups (npm run backup asks it over this socket).
  const control =
    composed.kind === 'full' && pauseEnricher
      ? await listenBackups(composed.context, composed.repositories.backups, { settled, pause: pauseEnricher })
      : undefined;
  const url = `http://${config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host}:${config.port}`;

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      const started = Date.now();
      // Stop taking requests first (the edge hands what it buffered to the message log), then drain
      // the one-process log, then let consumers finish their batch and jobs their run.
      await new Promise<void>((resolve) => (control ? control.close(() => resolve()) : resolve()));
      await app.close();
      // An edge's spool: forwarded to Kafka while it takes them (what is left is forwarded at the next start).
      if (context.spool) await drainSpool(context, started + config.shutdownTimeoutMs * 0.7);
      if (consumers.length > 0) await drainLog(context, started + config.shutdownTimeoutMs * 0.7);
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      await closeContext(context);
    })());
  return { context, app, url, stop };
}

/**
 * The control socket of a one-process platform on the embedded stores (services/control.ts): a
 * backup request takes a consistent backup in this process (shared/backup), checkpointed at the
 * enricher's groups. None on servers (Postgres, ClickHouse, Kafka): their own tools back them up.
 */
async function listenBackups(context: Context, backups: BackupDeps['backups'], running: NonNullable<BackupDeps['running']>): Promise<Server | undefined> {
  const { config } = context;
  if (config.database.kind !== 'pglite' || config.analytics.kind !== 'chdb' || config.messageLog.kind !== 'lmdb') return undefined;
  const [{ listenControl }, { takeBackup }, { ENRICHER_TOPIC_GROUPS }] = await Promise.all([
    import('./control.js'),
    import('#shared/backup/backup.js'),
    import('#shared/message-log/caught-up.js'),
  ]);
  try {
    return await listenControl(config.dataDir, context.log, async (target) => {
      const manifest = await takeBackup({ ...context, backups, groups: ENRICHER_TOPIC_GROUPS, running }, target);
      context.log.info({ target, took_ms: manifest.took_ms, checkpoint: manifest.checkpoint }, 'backup taken');
      return manifest;
    });
  } catch (error) {
    // The platform serves without it; npm run backup refuses the same DATA_DIR (it must not open the stores this process holds).
    context.log.error({ err: error }, 'no control socket: npm run backup cannot ask this platform for a backup while it runs');
    return undefined;
  }
}

/**
 * On the way out of a one-process platform: waits until this process's consumers have stored what
 * the durable message log holds (visits, beacons, events), until `deadline`, and says in the log what
 * was drained and what is left (on disk, consumed at the next start). Kafka keeps what it holds for
 * the other members of the groups: nothing to wait for there.
 */
async function drainLog(context: Pick<ProcessContext, 'messageLog' | 'log'>, deadline: number): Promise<void> {
  const { messageLog, log } = context;
  if (messageLog.kind !== 'lmdb') return;
  const lag = async () => (await messageLog.consumers()).reduce((sum, consumer) => sum + (consumer.lag ?? 0), 0);
  const started = Date.now();
  const before = await lag();
  let left = before;
  while (left > 0 && Date.now() < deadline) {
    await sleep(20);
    left = await lag();
  }
  const fields = { drained: before - left, left, waited_ms: Date.now() - started };
  if (left === 0) log.info(fields, 'message log drained: every message published before the shutdown is stored');
  else log.warn(fields, 'shutdown deadline reached with messages left in the durable message log: they are kept on disk and consumed at the next start');
}

/** On the way out of an ingest node with Kafka: waits until Kafka holds what its spool holds, until `deadline`, and says so in the log. */
async function drainSpool(context: Pick<ProcessContext, 'spool' | 'log'>, deadline: number): Promise<void> {
  const { spool, log } = context;
  if (!spool || (await spool.drain(deadline))) return;
  const left = spool.status().map(({ topic, messages }) => ({ topic, messages }));
  log.warn({ left }, 'shutdown deadline reached with messages left on the spool: they are kept on disk and forwarded at the next start');
}

/** Process entry: parse config (one clear line and exit 1 if bad), start, drain on SIGTERM/SIGINT. */
export async function main(rolesOverride?: Role[]): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(rolesOverride ? { ...process.env, SERVICE_ROLES: rolesOverride.join(',') } : process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const started = performance.now();
  // Before the context starts its threads (they inherit the priority); a worker sharing its host
  // with the pipeline yields the CPU to it.
  let nice: number | string | undefined;
  if (config.roles.every((role) => role === 'worker')) {
    try {
      nice = lowerPriority(config.workerNice);
    } catch (error) {
      // Refused by the system (a sandbox's seccomp rules): the worker runs at its priority, and says so.
      nice = `unchanged: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  // The handlers are in place before start-up: the server answers health before startPlatform
  // returns, so a supervisor's SIGTERM may arrive while it still runs. Such a signal drains the
  // platform as soon as it has started, instead of killing it half-started.
  let requested: string | undefined;
  let onSignal = (signal: string) => {
    requested ??= signal;
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  let platform: Platform;
  try {
    platform = await startPlatform(config);
  } catch (error) {
    process.stderr.write(`start-up failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  }
  const { context, url } = platform;
  // The memory budget the embedded engines were sized from (MEMORY_LIMIT_MB, the cgroup's limit or the default).
  const memory = { memory_limit_mb: config.memory.limitMb, memory_limit_from: config.memory.source };
  context.log.info({ url, roles: config.roles, nice, ...memory, startup_ms: Math.round(performance.now() - started) }, 'listening');
  process.stdout.write(`linktrack ${config.roles.join(',')} listening on ${url} (health: ${url}/api/v1/health)\n`);

  const shutdown = (signal: string) => {
    context.log.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      context.log.error({ timeout_ms: config.shutdownTimeoutMs }, 'drain timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    platform.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        context.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  onSignal = shutdown;
  if (requested) shutdown(requested);
}
