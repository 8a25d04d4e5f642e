// Restores a backup folder (npm run backup) into an empty DATA_DIR: `npm run restore -- <dir>` (in
// the image: node dist/scripts/restore.js <dir>). Verifies the manifest's checksums, the schema
// versions and the secrets key before it writes anything; refuses a DATA_DIR that holds anything or
// that a platform runs on. Start the same or a newer build on DATA_DIR afterwards: it migrates forward.
// Exit codes: 0 done, 1 refused or failed (the message says why), 2 usage or configuration.
import { resolve } from 'node:path';
import { restoreBackup } from '#shared/backup/backup.js';
import { analyticsBackupRepository } from '#shared/backup/backup.repository.js';
import { configOrExit, folderArgument } from './lib/cli.js';
import { keyId } from '#shared/secrets/secret-box.js';
import { askControl } from '#services/control.js';

const dir = folderArgument('npm run restore -- <backup folder>   (into DATA_DIR, which must be empty)');
const config = configOrExit();
if (await askControl(config.dataDir, { command: 'ping' }).catch(() => undefined)) {
  process.stderr.write(`restore refused: a platform is running on DATA_DIR ${config.dataDir}: restore into an empty DATA_DIR no platform uses\n`);
  process.exit(1);
}
try {
  const { createAnalytics } = await import('#shared/analytics/analytics.js');
  const analyticsConfig = config.analytics;
  const manifest = await restoreBackup(
    {
      config,
      openAnalytics: () => {
        const analytics = createAnalytics(analyticsConfig);
        return { backups: analyticsBackupRepository(analytics), close: () => analytics.close() };
      },
      configuredKeyId: config.secrets.key ? keyId(config.secrets.key) : undefined,
    },
    resolve(dir),
  );
  process.stdout.write(
    `restored ${resolve(dir)} (taken ${manifest.started_at} by build ${manifest.build}; schema ${manifest.schema.database.applied}/${manifest.schema.analytics.applied}) into ${config.dataDir}: start the platform on it\n`,
  );
  // Explicitly: PGlite's runtime sets process.exitCode when it closes.
  process.exit(0);
} catch (error) {
  process.stderr.write(`restore refused: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
