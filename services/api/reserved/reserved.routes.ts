import { AppError } from '#shared/errors.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { RESERVED_ROUTES } from '#shared/reserved.js';

const notImplemented = async (): Promise<never> => {
  throw new AppError('not_implemented');
};

/**
 * The reserved routes of `shared/reserved.ts` (the swarm API's three named paths), each answering
 * a stable 501 `not_implemented` rather than a 404, counted in its swarm bucket. No handler of a
 * feature sits behind them.
 */
export function reservedRoutes(): RouteDef[] {
  return RESERVED_ROUTES.map((route) =>
    defineRoute({ ...route, tags: ['swarm'], auth: { kind: 'none' }, errors: ['not_implemented'], handler: notImplemented }),
  );
}
