import pg from 'pg';
import { createDatabase } from '../db/database.js';
import { uniqueName } from './context.js';
/**
 * An empty database of the suite's kind: a new in-memory PGlite when embedded, a throwaway
 * database on the server of DATABASE_URL in the services run. For tests that need "no rows yet".
 */
export async function createFreshDatabase() {
    const serverUrl = process.env.DATABASE_URL;
    if (!serverUrl) {
        const database = await createDatabase({ kind: 'pglite', dir: 'memory://' });
        return { database, drop: () => database.close() };
    }
    const name = uniqueName('lt_test').replace(/-/g, '_');
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    try {
        await admin.query(`CREATE DATABASE ${name}`);
    }
    finally {
        await admin.end();
    }
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const database = await createDatabase({ kind: 'postgres', url: url.toString(), poolMax: 2 });
    return {
        database,
        async drop() {
            await database.close();
            const client = new pg.Client({ connectionString: serverUrl });
            await client.connect();
            try {
                await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
            }
            finally {
                await client.end();
            }
        },
    };
}
//# sourceMappingURL=fresh-database.js.map