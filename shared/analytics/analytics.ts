import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import type * as ClickHouse from '@clickhouse/client';
import type { ClickHouseClient, ClickHouseClientConfigOptions } from '@clickhouse/client';
import type * as ChdbModule from 'chdb';
import type * as ChdbConnection from 'chdb/connection';
import type { Config } from '../config.js';
import { chdbServerArgs } from '../memory-budget.js';
import { isoTimeAt } from '../time.js';

/**
 * ClickHouse wants `YYYY-MM-DD hh:mm:ss.sss` in UTC for DateTime64 columns. Every stored visit
 * passes here: an ISO text or epoch ms goes through the per-second cache of isoTimeAt.
 */
export function toClickHouseTime(time: string | number | Date): string {
  const msecs = typeof time === 'number' ? time : typeof time === 'string' ? Date.parse(time) : time.getTime();
  const iso = isoTimeAt(msecs);
  // A six-digit or negative year (out of DateTime64's range anyway) is passed on as Date wrote it.
  return iso.length === 24 ? `${iso.slice(0, 10)} ${iso.slice(11, 23)}` : iso.replace('T', ' ').replace('Z', '');
}

/**
 * Settings of an insert that a redelivery may repeat: the same token drops the repeat, in `visits`
 * and in the rollups its materialized views feed (without the second setting the views would count
 * the repeated block again).
 */
export const deduplicatedBy = (token: string) => ({ insert_deduplication_token: token, deduplicate_blocks_in_dependent_materialized_views: 1 as const });
/** What an insert states when it names no token (see the chDB note in createAnalytics). */
const NO_DEDUPLICATION = { insert_deduplication_token: '', deduplicate_blocks_in_dependent_materialized_views: 0 as const };

/** The rows of a SELECT with `{name:Type}` parameters, as objects (JSONEachRow). */
export async function selectRows<T>(client: ClickHouseClient, query: string, params: Record<string, unknown>): Promise<T[]> {
  const result = await client.query({ query, query_params: params, format: 'JSONEachRow' });
  return result.json<T>();
}

/** The format of an encoded insert's rows: one JSON array of the columns' values per line. */
const ENCODED_FORMAT = 'JSONCompactEachRow';

/** An insert whose rows are already encoded (ENCODED_FORMAT lines, UTF-8). */
export interface EncodedInsert {
  table: string;
  columns: [string, ...string[]];
  body: Buffer;
  settings: Record<string, string | number>;
}

/** The analytics store: one @clickhouse/client, over HTTP to a server or in-process through chDB. */
export interface Analytics {
  kind: 'chdb' | 'clickhouse';
  client: ClickHouseClient;
  /**
   * Inserts rows encoded by the caller (a visit batch). chDB takes the bytes as they are, its
   * settings scoped to the statement (the client's path makes a string of the rows again and sets
   * them on the session; this one took a batch's insert about 12 % less time); the server gets
   * them as the request body.
   */
  insertEncoded(insert: EncodedInsert): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The folder of chDB's data directory `dir` where the engine may write and read backups (BACKUP … TO File): absolute, as the engine wants. */
export function chdbBackupsDir(dir: string): string {
  return join(resolve(dir), 'backups');
}

/** Builds the ClickHouse client from the validated config; only the connection differs between modes. */
export function createAnalytics(config: Config['analytics']): Analytics {
  // Loaded when a client is made, not when this module is imported: the repositories import the
  // helpers above, and a process without the analytics store (services/platform.ts) loads neither
  // the client nor chDB.
  const load = createRequire(import.meta.url);
  const { createClient } = load('@clickhouse/client') as typeof ClickHouse;
  // 64-bit integers as JSON numbers on both engines (the server quotes them by default, chDB does not).
  const settings = { date_time_input_format: 'best_effort' as const, output_format_json_quote_64bit_integers: 0 as const };
  let client: ClickHouseClient;
  let insertEncoded: Analytics['insertEncoded'];
  let starter: { close(): void } | undefined;
  if (config.kind === 'clickhouse') {
    client = createClient({ url: config.url, clickhouse_settings: settings, request_timeout: 30_000 });
    // The client's insert encodes rows itself (a JSON format wants an object stream): the statement
    // goes as an exec with the bytes as its body, and the empty answer is read to its end.
    insertEncoded = async ({ table, columns, body, settings: own }) => {
      const { stream } = await client.exec({
        query: `INSERT INTO ${table} (${columns.join(', ')}) FORMAT ${ENCODED_FORMAT}`,
        values: Readable.from([body], { objectMode: false }),
        clickhouse_settings: own,
      });
      for await (const _ of stream);
    };
  } else {
    if (config.dir !== ':memory:') mkdirSync(config.dir, { recursive: true });
    // Loaded only here: chDB maps a ClickHouse engine of some 200 MB, which a process on a ClickHouse server never needs.
    const { createChdbConnection } = load('chdb/connection') as typeof ChdbConnection;
    // The engine's server settings (caches, merge pools) are fixed when the first connection
    // to the data directory starts it, from that connection's arguments; createChdbConnection takes
    // none, so a session opened first with the memory budget's starts the engine, and the client's
    // connection then joins it. The session stays open while the client is.
    // The engine also takes BACKUP and RESTORE to files in chdbBackupsDir only (a backup of the running
    // platform, shared/backup): no statement can write a backup anywhere else.
    const serverArgs = [
      ...(config.budget ? chdbServerArgs(config.budget.server) : []),
      ...(config.dir === ':memory:' ? [] : [`--backups.allowed_path=${chdbBackupsDir(config.dir)}/`]),
    ];
    starter = serverArgs.length > 0 ? new (load('chdb') as typeof ChdbModule).Session(config.dir, { connectionArgs: serverArgs }) : undefined;
    // chdb types its connection against @clickhouse/client-common, which @clickhouse/client bundles
    // as its own copy: the same interface under two declarations, hence the cast.
    const chdb = createChdbConnection({ path: config.dir });
    const connection = chdb as unknown as NonNullable<ClickHouseClientConfigOptions['connection']>;
    // chDB applies a call's settings with `SET` on its session, where they stay for every later
    // call: an insert after one with a deduplication token would carry that stale token and be
    // dropped as a duplicate. The client's defaults go with every call (a call's own settings win),
    // so every call states its deduplication settings, none unless it names a token.
    // Query settings (threads per query) are the connection's own: they go with every call.
    const defaults = { ...settings, ...config.budget?.query, ...NO_DEDUPLICATION };
    client = createClient({ connection, clickhouse_settings: defaults });
    insertEncoded = async ({ table, columns, body, settings: own }) => {
      await chdb.chdb.rawInsert({ table, columns, values: body, format: ENCODED_FORMAT, settings: { ...defaults, ...own } });
    };
  }
  return {
    kind: config.kind,
    client,
    insertEncoded,
    async ping() {
      const result = await client.ping();
      if (!result.success) throw result.error;
    },
    async close() {
      await client.close();
      starter?.close();
    },
  };
}
