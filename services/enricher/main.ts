// Entry point of the enricher role alone (production: one process per role).
import { main } from '../platform.js';

await main(['enricher']);
