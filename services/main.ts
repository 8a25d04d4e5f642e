// One process, the roles named by SERVICE_ROLES (default: all four on the embedded defaults).
// First: keeps start-up from growing the young generation for good (startup-heap.ts).
import '#shared/startup-heap.js';
import { main } from './platform.js';

await main();
