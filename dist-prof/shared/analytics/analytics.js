import { mkdirSync } from 'node:fs';
import { createClient } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';
/** ClickHouse wants `YYYY-MM-DD hh:mm:ss.sss` in UTC for DateTime64 columns. */
export const toClickHouseTime = (time) => new Date(time).toISOString().replace('T', ' ').replace('Z', '');
/** Builds the ClickHouse client from the validated config; only the connection differs between modes. */
export function createAnalytics(config) {
    // 64-bit integers as JSON numbers on both engines (the server quotes them by default, chDB does not).
    const settings = { date_time_input_format: 'best_effort', output_format_json_quote_64bit_integers: 0 };
    let client;
    if (config.kind === 'clickhouse') {
        client = createClient({ url: config.url, clickhouse_settings: settings, request_timeout: 30_000 });
    }
    else {
        if (config.dir !== ':memory:')
            mkdirSync(config.dir, { recursive: true });
        // chdb types its connection against @clickhouse/client-common, which @clickhouse/client bundles
        // as its own copy: the same interface under two declarations, hence the cast.
        const connection = createChdbConnection({ path: config.dir });
        // chDB applies a call's settings with `SET` on its session, where they stay for every later
        // call: an insert after one with a deduplication token would carry that stale token and be
        // dropped as a duplicate. Every call that can insert states its token, the empty one (none) by default.
        const withToken = (params) => ({
            ...params,
            clickhouse_settings: { ...params.clickhouse_settings, insert_deduplication_token: params.clickhouse_settings?.insert_deduplication_token ?? '' },
        });
        const [insert, exec, command] = [connection.insert.bind(connection), connection.exec.bind(connection), connection.command.bind(connection)];
        connection.insert = (params) => insert(withToken(params));
        connection.exec = (params) => exec(withToken(params));
        connection.command = (params) => command(withToken(params));
        client = createClient({ connection, clickhouse_settings: settings });
    }
    return {
        kind: config.kind,
        client,
        async ping() {
            const result = await client.ping();
            if (!result.success)
                throw result.error;
        },
        async close() {
            await client.close();
        },
    };
}
//# sourceMappingURL=analytics.js.map