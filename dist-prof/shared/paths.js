import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
/** The project root: the nearest folder above this module holding `postgres/migrations` (works from src and dist). */
export const PROJECT_ROOT = (() => {
    let dir = dirname(fileURLToPath(import.meta.url));
    while (!existsSync(join(dir, 'postgres', 'migrations'))) {
        const parent = dirname(dir);
        if (parent === dir)
            throw new Error('cannot find the project root (postgres/migrations) above ' + fileURLToPath(import.meta.url));
        dir = parent;
    }
    return dir;
})();
export const POSTGRES_MIGRATIONS = join(PROJECT_ROOT, 'postgres', 'migrations');
export const CLICKHOUSE_MIGRATIONS = join(PROJECT_ROOT, 'clickhouse', 'migrations');
//# sourceMappingURL=paths.js.map