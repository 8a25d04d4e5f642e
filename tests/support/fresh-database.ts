import pg from 'pg';
import { createDatabase, type Database } from '#shared/db/database.js';
import { uniqueName } from './context.js';

export interface FreshDatabase {
  database: Database;
  /** Closes the database and, on a server, drops it. */
  drop: () => Promise<void>;
}

/**
 * A database of its own on the server of `serverUrl` (its role may create databases, as
 * scripts/services-up.sh makes it): its URL, and what drops it.
 */
export async function serverDatabase(serverUrl: string, prefix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = uniqueName(prefix).replace(/-/g, '_');
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      // FORCE ends the database's remaining sessions, but not one of another role (an autovacuum
      // worker that has just started on it: "must be a member of the role whose process is being
      // terminated"): such a session ends by itself in a moment, so the drop is tried again.
      for (let attempt = 1; ; attempt++) {
        const client = new pg.Client({ connectionString: serverUrl });
        await client.connect();
        try {
          await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
          return;
        } catch (error) {
          const code = (error as { code?: string }).code;
          if (attempt >= 10 || (code !== '42501' && code !== '55006')) throw error;
        } finally {
          await client.end();
        }
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
    },
  };
}

/**
 * An empty database of the suite's kind: a new in-memory PGlite when embedded, a throwaway
 * database on the server of DATABASE_URL in the services run. For tests that need "no rows yet".
 */
export async function createFreshDatabase(): Promise<FreshDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const database = await createDatabase({ kind: 'pglite', dir: 'memory://' });
    return { database, drop: () => database.close() };
  }
  const own = await serverDatabase(serverUrl, 'lt_test');
  const database = await createDatabase({ kind: 'postgres', url: own.url, poolMax: 2 });
  return {
    database,
    async drop() {
      await database.close();
      await own.drop();
    },
  };
}

/**
 * For a test that changes a platform-wide setting (such as `require_totp_for_staff`), which the
 * other test files would see on the services run's shared Postgres: a database of its own there,
 * as the overrides of its context, and what drops it (after the context is closed). Embedded,
 * every context has its own PGlite already: nothing to do.
 */
export async function ownServerDatabase(prefix: string): Promise<{ overrides: Record<string, string>; drop: () => Promise<void> }> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) return { overrides: {}, drop: async () => undefined };
  const own = await serverDatabase(serverUrl, prefix);
  return { overrides: { DATABASE_URL: own.url }, drop: own.drop };
}
