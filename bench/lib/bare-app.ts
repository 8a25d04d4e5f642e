// The baseline of the redirect benchmarks: a bare Fastify app answering every `/:slug` with a fixed
// 302, the least a Node HTTP server does for a redirect. bench/redirect.ts runs it in its own
// process beside the edge; bench/platform.ts runs it as a process of its own (bare-server.ts), started
// and loaded as the platform is, so that CPU per stored visit can be read as a ratio of it.
import Fastify, { type FastifyInstance } from 'fastify';

/** The location every answer of the bare app carries. */
export const BARE_LOCATION = 'https://example.com/landing';

/** A bare Fastify app: a fixed 302 for `/:slug`, and (`withHealth`) the platform's health answer, for a process started as the platform is. */
export function bareApp({ withHealth = false } = {}): FastifyInstance {
  const bare = Fastify();
  bare.get('/:slug', async (_request, reply) => reply.code(302).header('location', BARE_LOCATION).send());
  if (withHealth) bare.get('/api/v1/health', async () => ({ data: { status: 'ok' } }));
  return bare;
}
