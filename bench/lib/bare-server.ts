// The bare app of lib/bare-app.ts as a process of its own, on 127.0.0.1:$PORT: the baseline that
// bench/platform.ts starts, pins and measures from /proc exactly as it does the platform.
import { bareApp } from './bare-app.js';

const app = bareApp({ withHealth: true });
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
