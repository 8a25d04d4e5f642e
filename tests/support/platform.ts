import { buildApp } from '#services/app.js';
import { createTestContext } from './context.js';
import { listenerClient } from './listener.js';
import { claimSubdomain, createOwner } from './owners.js';

/**
 * The platform as the edge tests meet it: a test context (with `overrides`), the app with every
 * role's routes, the server's request listener as a client (what a socket reaches first: Host
 * routing, then the short-host listener), and an owner with a subdomain.
 */
export async function startTestPlatform(overrides: Parameters<typeof createTestContext>[0] = {}) {
  const context = await createTestContext(overrides);
  const built = await buildApp(context);
  const { app } = built;
  const ingest = listenerClient(built.listener!);
  const owner = await createOwner(context, app);
  const subdomain = await claimSubdomain(app, owner);
  return { context, built, app, ingest, owner, subdomain };
}
