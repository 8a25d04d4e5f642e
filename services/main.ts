// One process, the roles named by SERVICE_ROLES (default: all four on the embedded defaults).
import { main } from './platform.js';

await main();
