import { migrateAnalytics } from '../analytics/migrate.js';
import { createAnalytics } from '../analytics/analytics.js';
import { createDatabase } from '../db/database.js';
import { migrateDatabase } from '../db/migrate.js';
import { testConfig } from './context.js';

/**
 * Runs once per test run: migrates the shared Postgres server (services run) so that test files
 * start on a ready schema, and proves the migrations apply from scratch on the embedded stores.
 */
export default async function setup(): Promise<void> {
  const config = testConfig();
  const database = await createDatabase(config.database);
  try {
    await migrateDatabase(database);
  } finally {
    await database.close();
  }
  if (config.analytics.kind === 'clickhouse') {
    const analytics = createAnalytics(config.analytics);
    try {
      await migrateAnalytics(analytics);
    } finally {
      await analytics.close();
    }
  }
}
