import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
import type { DB } from './schema.js';

/** The relational store: a typed query builder plus the few raw operations migrations need. */
export interface Database {
  kind: 'pglite' | 'postgres';
  db: Kysely<DB>;
  /**
   * Runs a multi-statement SQL script and the bookkeeping callback in one transaction,
   * serialised across processes by an advisory lock.
   */
  migrateInTransaction<T>(work: (tx: ScriptRunner) => Promise<T>): Promise<T>;
  /**
   * PGlite only: a tar of its data directory, taken after a checkpoint while no other statement runs
   * (every query of the process waits for it), so the copy is consistent (a backup, shared/backup).
   */
  snapshot?(): Promise<Blob>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** What a migration transaction can do: run a script, run one parameterised query. */
export interface ScriptRunner {
  exec(script: string): Promise<void>;
  query<R>(text: string, params?: unknown[]): Promise<R[]>;
}

/** Advisory lock id shared by every process migrating the same database. */
const MIGRATION_LOCK = 727_001;

/** Opens PGlite under the data dir or a pg pool on DATABASE_URL, from the validated config. */
export async function createDatabase(config: Config['database']): Promise<Database> {
  if (config.kind === 'postgres') {
    const pool = new pg.Pool({ connectionString: config.url, max: config.poolMax, connectionTimeoutMillis: 5_000 });
    // An idle client that loses its connection must not crash the process; the pool replaces it.
    pool.on('error', () => undefined);
    // Nor a client checked out when the server goes away between two statements (a transaction
    // awaiting its next step: Postgres stopped, found by tests/faults.int.test.ts): pg emits 'error'
    // on it with no listener, which killed the process. The statement in hand or the next one fails
    // with the lost connection, and the pool drops the client when it is released.
    pool.on('connect', (client) => client.on('error', () => undefined));
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    return {
      kind: 'postgres',
      db,
      async migrateInTransaction(work) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
          const result = await work({
            exec: async (script) => void (await client.query(script)),
            query: async <R>(text: string, params?: unknown[]) => (await client.query(text, params)).rows as R[],
          });
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw error;
        } finally {
          client.release();
        }
      },
      async ping() {
        await sql`SELECT 1`.execute(db);
      },
      async close() {
        await db.destroy();
      },
    };
  }
  if (config.dir !== 'memory://') {
    mkdirSync(config.dir, { recursive: true });
    if (!existsSync(join(config.dir, 'PG_VERSION'))) await initdbApart(config.dir);
  }
  // Loaded here: a process on a Postgres server never loads PGlite (the edges stay small).
  const [{ PGlite }, { pg_trgm }, { PGliteDialect }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
    import('kysely-pglite-dialect'),
  ]);
  // pg_trgm backs the substring search of links (`q`), as it does on a Postgres server.
  // shared_buffers from the memory budget (32MB at 1 GiB), not Postgres's 128MB: in the one-process
  // platform the tables are small and the files are in the operating system's cache anyway; 32MB
  // kept the process about 100 MB smaller once restarted on its data (bench/platform.ts, peak RSS).
  const sharedBuffers = `shared_buffers=${config.sharedBuffersMb ?? 32}MB`;
  const pglite = await PGlite.create(config.dir, { extensions: { pg_trgm }, startParams: [...PGlite.defaultStartParams, '-c', sharedBuffers] });
  const db = new Kysely<DB>({ dialect: new PGliteDialect(pglite) });
  return {
    kind: 'pglite',
    db,
    migrateInTransaction(work) {
      return pglite.transaction(async (tx) =>
        work({
          exec: async (script) => void (await tx.exec(script)),
          query: async <R>(text: string, params?: unknown[]) => (await tx.query<R>(text, params)).rows,
        }),
      );
    },
    async snapshot() {
      // PGlite runs one statement at a time: inside a transaction of its own nothing else runs, and the
      // checkpoint first writes what its shared buffers hold, so the files are the database itself.
      return pglite.transaction(async (tx) => {
        await tx.exec('CHECKPOINT');
        return pglite.dumpDataDir('none');
      });
    },
    async ping() {
      await pglite.query('SELECT 1');
    },
    async close() {
      await db.destroy();
      if (!pglite.closed) await pglite.close();
    },
  };
}

/** Writes PGlite's data directory `dir` (which must not exist yet) from a tar of one (Database.snapshot): a restore. */
export async function loadPgliteDataDir(dir: string, tar: Blob): Promise<void> {
  const { PGlite } = await import('@electric-sql/pglite');
  mkdirSync(dir, { recursive: true });
  const pglite = await PGlite.create(dir, { loadDataDir: tar });
  await pglite.close();
}

/**
 * Creates PGlite's data directory (initdb) in a child process. initdb grows PGlite's WebAssembly
 * memory to about 750 MB, and WebAssembly memory never shrinks: done in this process, a first start
 * kept it for its life (a worker thread returns only part of it). The child's memory goes with it,
 * and this process then opens the directory as a restart does.
 */
async function initdbApart(dir: string): Promise<void> {
  const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const script = 'require(process.argv[1]).PGlite.create(process.argv[2]).then((pg) => pg.close())';
  await promisify(execFile)(process.execPath, ['-e', script, pglite, dir]);
}
