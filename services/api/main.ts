// Entry point of the api role alone (production: one process per role).
import { main } from '../platform.js';

await main(['api']);
