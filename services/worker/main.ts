// Entry point of the worker role alone (production: one process per role).
import { main } from '../platform.js';

await main(['worker']);
