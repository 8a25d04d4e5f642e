// Backs up a one-process platform (PGlite, chDB and the LMDB log under DATA_DIR) into an empty or new
// folder: `npm run backup -- <dir>` (in the image: node dist/scripts/backup.js <dir>). When the
// platform runs, it takes the backup itself, asked over its control socket (DATA_DIR/control.sock);
// when it is stopped, this process opens DATA_DIR. docs/operations.md, "Backup and restore, one process".
// Exit codes: 0 done, 1 refused or failed (the message says why), 2 usage or configuration.
import { resolve } from 'node:path';
import { takeBackup } from '#shared/backup/backup.js';
import { analyticsBackupRepository } from '#shared/backup/backup.repository.js';
import { configOrExit, folderArgument } from './lib/cli.js';
import { createDatabase } from '#shared/db/database.js';
import { createLogger } from '#shared/logger.js';
import { createMetrics } from '#shared/metrics.js';
import { createDurableLog } from '#shared/message-log/lmdb.js';
import { loadSecretBox } from '#shared/secrets/keys.js';
import { askControl, controlSocketUnfit } from '#services/control.js';
import { ENRICHER_TOPIC_GROUPS } from '#shared/message-log/caught-up.js';

const dir = folderArgument('npm run backup -- <folder>   (an empty or new folder)');
const target = resolve(dir);
const config = configOrExit();
if (config.database.kind !== 'pglite' || config.analytics.kind !== 'chdb' || config.messageLog.kind !== 'lmdb') {
  process.stderr.write(
    'npm run backup is for the one-process platform (no DATABASE_URL, CLICKHOUSE_URL or KAFKA_BROKERS): back up servers with their own tools (docs/operations.md, "Backup and restore, production")\n',
  );
  process.exit(2);
}

/** Prints what was backed up, or why not, and exits. */
function done(outcome: { ok: true; manifest: unknown } | { ok: false; error: string }, how: string): never {
  if (!outcome.ok) {
    process.stderr.write(`backup refused: ${outcome.error}\n`);
    process.exit(1);
  }
  const manifest = outcome.manifest as { took_ms: number; files: { path: string; bytes: number }[]; checkpoint: { topic: string; offset: number }[] };
  const bytes = manifest.files.reduce((sum, file) => sum + file.bytes, 0);
  process.stdout.write(
    `backup of ${config.dataDir} (${how}) written to ${target} in ${manifest.took_ms} ms: ` +
      `${manifest.files.map((file) => `${file.path} ${file.bytes} B`).join(', ')} (${bytes} B); ` +
      `checkpoint ${manifest.checkpoint.map(({ topic, offset }) => `${topic}@${offset}`).join(', ')}\n`,
  );
  process.exit(0);
}

const unfit = controlSocketUnfit(config.dataDir);
if (unfit) {
  process.stderr.write(`backup refused: ${unfit} (or stop the platform and copy DATA_DIR: docs/operations.md, "Backup and restore, one process")\n`);
  process.exit(1);
}
const answer = await askControl(config.dataDir, { command: 'backup', target });
if (answer) done(answer, 'taken by the running platform');

// No platform answers: this process opens the stores (each opened by one process at a time).
const log = createLogger({ logLevel: 'warn' });
const { createAnalytics } = await import('#shared/analytics/analytics.js');
const db = await createDatabase(config.database);
const analytics = createAnalytics(config.analytics);
const messageLog = createDurableLog(config.messageLog, log, createMetrics());
try {
  const secrets = loadSecretBox(config.secrets, log);
  const manifest = await takeBackup(
    { config, db, analytics, backups: analyticsBackupRepository(analytics), messageLog, secrets, groups: ENRICHER_TOPIC_GROUPS },
    target,
  );
  await Promise.all([messageLog.close(), analytics.close(), db.close()]);
  done({ ok: true, manifest }, 'the platform is stopped');
} catch (error) {
  await Promise.allSettled([messageLog.close(), analytics.close(), db.close()]);
  done({ ok: false, error: error instanceof Error ? error.message : String(error) }, '');
}
