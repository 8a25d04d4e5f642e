import type { Kysely, Selectable } from 'kysely';
import type { DB, ImportRowsTable, ImportsTable } from '../db/schema.js';

export type ImportRow = Omit<Selectable<ImportsTable>, 'file'>;
export type ImportReportRow = Omit<ImportRowsTable, 'import_id'>;

/** The columns of an import but its file (a list or a poll never reads the file). */
const STATE_COLUMNS = [
  'id',
  'seq',
  'owner_id',
  'subdomain',
  'source',
  'dry_run',
  'status',
  'error',
  'file_bytes',
  'rows_total',
  'rows_read',
  'counts',
  'created_at',
  'started_at',
  'finished_at',
] as const;

/** SQL for imports run as jobs (issue 39): the uploaded file, the import's state and its per-row report. */
export function importsRepository(db: Kysely<DB>) {
  return {
    async insert(row: {
      id: string;
      ownerId: string;
      subdomain: string;
      source: string;
      dryRun: boolean;
      file: string;
      fileBytes?: number;
      counts: Record<string, number>;
    }) {
      return db
        .insertInto('imports')
        .values({
          id: row.id,
          owner_id: row.ownerId,
          subdomain: row.subdomain,
          source: row.source,
          dry_run: row.dryRun,
          status: 'queued',
          file: row.file,
          file_bytes: row.fileBytes ?? Buffer.byteLength(row.file),
          counts: JSON.stringify(row.counts),
        })
        .returning(STATE_COLUMNS)
        .executeTakeFirstOrThrow();
    },
    async find(id: string): Promise<ImportRow | undefined> {
      return db.selectFrom('imports').select(STATE_COLUMNS).where('id', '=', id).executeTakeFirst();
    },
    /** The file of an import still to run (null once it has finished). */
    async fileOf(id: string): Promise<string | null | undefined> {
      return (await db.selectFrom('imports').select('file').where('id', '=', id).executeTakeFirst())?.file;
    },
    /** An owner's imports, newest first. */
    async listByOwner(ownerId: string, limit: number): Promise<ImportRow[]> {
      return db.selectFrom('imports').select(STATE_COLUMNS).where('owner_id', '=', ownerId).orderBy('seq', 'desc').limit(limit).execute();
    },
    async markRunning(id: string, rowsTotal: number): Promise<void> {
      await db
        .updateTable('imports')
        .set({ status: 'running', rows_total: rowsTotal, started_at: new Date() })
        .where('id', '=', id)
        .where('status', 'in', ['queued', 'running'])
        .execute();
    },
    /**
     * A checkpoint: the report's next rows and the counts and rows read so far, in one transaction
     * (a row already stored, by a run interrupted after its checkpoint, is kept as it was).
     */
    async checkpoint(id: string, rows: ImportReportRow[], rowsRead: number, counts: Record<string, number>): Promise<void> {
      await db.transaction().execute(async (trx) => {
        if (rows.length > 0) {
          await trx
            .insertInto('import_rows')
            .values(rows.map((row) => ({ import_id: id, ...row })))
            .onConflict((conflict) => conflict.columns(['import_id', 'line']).doNothing())
            .execute();
        }
        await trx
          .updateTable('imports')
          .set({ rows_read: rowsRead, counts: JSON.stringify(counts) })
          .where('id', '=', id)
          .execute();
      });
    },
    /** Ends an import: completed or failed (with the error code); its file is removed. */
    async finish(id: string, status: 'completed' | 'failed', error: { code: string; details: Record<string, unknown> } | null = null): Promise<void> {
      await db
        .updateTable('imports')
        .set({ status, error: error && JSON.stringify(error), file: null, finished_at: new Date() })
        .where('id', '=', id)
        .execute();
    },
    /** Rows of an import's report by line, after `afterLine`, optionally of one status. */
    async rows(id: string, { afterLine, limit, status }: { afterLine: number; limit: number; status?: string }): Promise<ImportReportRow[]> {
      let query = db
        .selectFrom('import_rows')
        .select(['line', 'status', 'slug', 'reason', 'link_id'])
        .where('import_id', '=', id)
        .where('line', '>', afterLine);
      if (status) query = query.where('status', '=', status);
      return query.orderBy('line').limit(limit).execute();
    },
  };
}
