// Entry point of the worker role alone (production: one process per role).
// First: keeps start-up from growing the young generation for good (startup-heap.ts).
import '#shared/startup-heap.js';
import { main } from '../platform.js';

await main(['worker']);
