import type { FastifyInstance } from 'fastify';
import cookie from '@fastify/cookie';
import type { Context } from '#shared/context.js';
import { createEventBus } from '#shared/events/events.js';
import type { RateLimiter } from '#shared/http/rate-limit.js';
import { registerRoutes, type RegistrarDeps } from '#shared/http/register.js';
import type { RouteDef } from '#shared/http/route.js';
import type { Repositories } from '../repositories.js';
import { authRoutes } from './auth/auth.routes.js';
import { authService } from './auth/auth.service.js';
import { createAuthenticator } from './auth/authenticator.js';
import { createCaptcha } from './auth/captcha.js';
import { createMailer } from './auth/mailer.js';
import { passwordRoutes } from './auth/password.routes.js';
import { passwordService } from './auth/password.service.js';
import { sessionsRoutes } from './auth/sessions.routes.js';
import { totpRoutes } from './auth/totp.routes.js';
import { totpService } from './auth/totp.service.js';
import { settingsRoutes } from './settings/settings.routes.js';
import { deviceCookieKey, deviceCookies } from './auth/device-cookie.js';
import type { AbuseGuard } from './auth/abuse.js';
import { discoveryRoutes } from './discovery/discovery.routes.js';
import { tokensRoutes } from './tokens/tokens.routes.js';
import { tokensService } from './tokens/tokens.service.js';
import { teamsRoutes } from './teams/teams.routes.js';
import { teamsService } from './teams/teams.service.js';
import { deleteOwnAccountRoutes } from './users/delete-own.routes.js';
import { usersRoutes } from './users/users.routes.js';
import { usersService } from './users/users.service.js';
import { deadLettersRoutes } from './dead-letters/dead-letters.routes.js';
import { deadLettersService } from './dead-letters/dead-letters.service.js';
import { subdomainsRoutes } from './subdomains/subdomains.routes.js';
import { subdomainsService, type SubdomainsService } from './subdomains/subdomains.service.js';
import { linksRoutes } from './links/links.routes.js';
// ---- bulk links (issue 40, item 5) ----
import { bulkLinksService } from './links/bulk.js';
import { acceptCsvBodies, bulkLinksRoutes } from './links/bulk.routes.js';
// ---- end bulk links ----
import { createQrRenderer } from './links/qr.js';
import { qrLogoRoutes } from './links/qr-logo.routes.js';
import type { InFlightGuard } from '#shared/http/in-flight.js';
import { linksService } from './links/links.service.js';
import { statsRoutes } from './stats/stats.routes.js';
import { statsService, type StatsService } from './stats/stats.service.js';
import { visitsRoutes } from './visits/visits.routes.js';
import { visitsService, type VisitsService } from './visits/visits.service.js';
import { legacyRoutes } from './legacy/legacy.routes.js';
import { erasuresRoutes } from './erasures/erasures.routes.js';
import { erasuresService } from './erasures/erasures.service.js';
import { exportsRoutes } from './exports/exports.routes.js';
import { exportsService } from './exports/exports.service.js';
import { importsRoutes } from './imports/imports.routes.js';
import { importsService } from './imports/imports.service.js';
import { reservedRoutes } from './reserved/reserved.routes.js';
import { domainsRoutes } from './domains/domains.routes.js';
import { domainsService } from './domains/domains.service.js';
import { webhooksRoutes } from './webhooks/webhooks.routes.js';
import { webhooksService } from './webhooks/webhooks.service.js';
import { registerDashboard, type ShortHostRoot } from './dashboard/dashboard.js';

/** The read services the API and the subdomains' public pages share (the pages go through the very services the endpoints use). */
export interface ReadServices {
  subdomains: SubdomainsService;
  stats: StatsService;
  visits: VisitsService;
}

/** Builds the shared read services once per process, from the repositories they read and the config. */
export function readServices(
  deps: Pick<Context, 'config' | 'cache' | 'log' | 'metrics'> & {
    repositories: Pick<Repositories, 'subdomains' | 'links' | 'stats' | 'users' | 'visits' | 'teams'>;
  },
): ReadServices {
  const { repositories } = deps;
  const subdomains = subdomainsService(deps);
  return { subdomains, stats: statsService({ repositories, subdomains }), visits: visitsService({ repositories, subdomains }) };
}

export interface ApiDeps {
  /** The process's repositories: each service is handed the ones it uses. */
  repositories: Repositories;
  /** The read services, shared with the public pages. */
  services: ReadServices;
  /** The process's rate limiter and anti-spam guard (shared with the edge when the process has both roles). */
  limiter: RateLimiter;
  abuse: AbuseGuard;
  /** The time zones reports offer (reportZonesOf: read at start-up, beside the other start-up reads). */
  zones: [string, ...string[]];
  /** Every route declaration the process serves, read at request time: the index, the status and the OpenAPI document list them. */
  served: () => RouteDef[];
  /** Folder of the built dashboard (default dist/web; tests point at a fixture). */
  dashboardDir?: string;
  /** `GET /` of a short host reaching the API: the subdomain's public page (only when no edge of this process takes short hosts). */
  shortHostRoot?: ShortHostRoot;
  /** The process's bound on each account's expensive work in flight (PNG QR codes, XLSX and PDF exports). */
  inFlight: InFlightGuard;
  /** What else closes with the API (the custom domains held for shortHostRoot). */
  onClose?: (() => Promise<void>) | undefined;
}

/** The api role's part of a process's HTTP app. */
export interface Api {
  /** The API's route declarations, the discovery routes first (health and metrics among them). */
  routes: RouteDef[];
  /** What the API's routes are checked with: the process's limiter and guard, and the API's own authenticator. */
  registrar: Required<RegistrarDeps>;
  /** Registers the API on the process's app: the session cookie's parser, the routes, the owner dashboard. */
  register(app: FastifyInstance): Promise<void>;
}

/** The api role: the `/api/v1` routes, the legacy v0 API, sign-in under `/auth`, the owner dashboard. */
export async function createApi(
  context: Context,
  { repositories, services, limiter, abuse, zones, served, dashboardDir, shortHostRoot, inFlight, onClose }: ApiDeps,
): Promise<Api> {
  const { config, log } = context;
  // The context's clients with the process's repositories: what the services below take slices of.
  const deps = { ...context, repositories };
  const authenticator = createAuthenticator(deps, abuse);
  const captcha = createCaptcha(context.cache, config.captcha.secret);
  const devices = deviceCookies(await deviceCookieKey(repositories));
  const registrar = { limiter, authenticator, abuse, publicUrl: config.publicUrl };
  // Each service once: those others use (subdomains, stats, visits) are handed to them.
  const { subdomains, stats, visits } = services;
  const links = linksService({ ...deps, subdomains, events: createEventBus(context) });
  // QR images are drawn on their own threads, once per short URL and parameters.
  const qr = createQrRenderer();
  const mailer = createMailer(config.smtp);
  const passwords = passwordService(deps, abuse, mailer);
  const erasures = erasuresService({ ...context, repositories, subdomains });
  const accounts = usersService(deps, abuse, erasures);
  // ---- bulk links (issue 40, item 5): each row checked and created as createLink's own ----
  const linkRoutes = linksRoutes(links, { qr, inFlight, logoOf: (name) => repositories.subdomains.qrLogo(name) });
  const createLinkRoute = linkRoutes.find((route) => route.operationId === 'createLink')!;
  const bulkLinks = bulkLinksService({ ...deps, subdomains, events: createEventBus(context) }, links, createLinkRoute.body!);
  // ---- end bulk links ----
  const routes: RouteDef[] = [
    ...discoveryRoutes({ context, limiter, routes: served, visits: repositories.visits }),
    ...authRoutes(deps, authService(deps, captcha, abuse, devices), captcha),
    ...passwordRoutes(context, passwords),
    ...sessionsRoutes(deps, (entry) => abuse.audit(entry)),
    ...totpRoutes(totpService(deps, abuse)),
    ...settingsRoutes(repositories, (entry) => abuse.audit(entry)),
    ...usersRoutes(repositories, accounts),
    ...deleteOwnAccountRoutes(deps, accounts),
    ...deadLettersRoutes(deadLettersService(context)),
    ...tokensRoutes(tokensService(deps)),
    ...teamsRoutes(teamsService(deps, (entry) => abuse.audit(entry), mailer)),
    ...subdomainsRoutes(subdomains, (entry) => abuse.audit(entry)),
    ...qrLogoRoutes({ subdomains, repositories, qr, audit: (entry) => abuse.audit(entry) }),
    ...bulkLinksRoutes(bulkLinks, createLinkRoute),
    ...linkRoutes,
    ...statsRoutes(stats, zones),
    ...visitsRoutes(visits),
    ...legacyRoutes({ visits, stats }),
    ...erasuresRoutes(erasures),
    ...exportsRoutes(exportsService({ repositories, stats, rawVisitsSinceOf: (ownerId, only) => subdomains.rawVisitsSinceOf(ownerId, only) }), inFlight),
    ...webhooksRoutes(webhooksService({ ...deps, subdomains })),
    ...domainsRoutes(domainsService({ ...context, repositories, subdomains })),
    ...importsRoutes(
      importsService({ links, subdomains, repositories, jobs: context.jobs, secrets: context.secrets, allowlist: context.config.webhooks.allowlist }),
    ),
    ...reservedRoutes(),
  ];
  return {
    routes,
    registrar,
    async register(app) {
      await app.register(cookie);
      acceptCsvBodies(app);
      app.addHook('onClose', async () => authenticator.close());
      app.addHook('onClose', async () => qr.close());
      if (onClose) app.addHook('onClose', onClose);
      app.addHook('onClose', async () => {
        await passwords.close();
        mailer?.close();
      });
      registerRoutes(app, routes, registrar);
      // The owner dashboard (its HTML on `/` and its pages, its hashed assets).
      await registerDashboard(app, { dir: dashboardDir, log, shortHostRoot });
    },
  };
}
