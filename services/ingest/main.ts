// Entry point of the ingest role alone (production: one process per role).
import { main } from '../platform.js';

await main(['ingest']);
