import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { uuidv7At } from '#shared/ids.js';
import { AppError } from '#shared/errors.js';
import { validateRequest } from '#shared/http/register.js';
import { parseClientJson } from '#shared/http/json-body.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { PROJECT_ROOT } from '#shared/paths.js';
import { BEACON_ATTACH_WINDOW_MS, SignalsSchema, uuidv7Time, type BeaconMessage, type Signals } from '#shared/tracker/beacon.js';
import { visitIdOfToken, type ConsentTokens } from '#shared/tracker/consent-token.js';
import { SUBDOMAIN_LABEL } from '#shared/links/hosts.js';
import { VISIT_TEXT_MAX, visitText } from '#shared/visits/raw-visit.js';
import { requestSiteOrigin } from '#shared/tracker/origins.js';
import type { BeaconProducer } from './visit-producer.js';
import type { TrackerOrigins } from './tracker-origins.js';
import { rule } from '#shared/i18n/index.js';

/** The tracker script, read once: plain JavaScript without dependencies. */
const TRACKER_JS = join(PROJECT_ROOT, 'public', 'tracker.js');

const tags = ['tracker'];

/** True for the id of a redirect's visit of the last 24 hours (UUIDv7 time): the visits the tracker may attach to. */
const isRecentVisitId = (id: string) => {
  const at = uuidv7Time(id);
  return at !== undefined && at <= Date.now() + 60_000 && Date.now() - at <= BEACON_ATTACH_WINDOW_MS;
};

const consentChoice = {
  analytics: z.boolean().meta({ description: 'Consent to client-side analytics signals.' }),
  lan_ip: z.boolean().meta({ description: 'Consent to the LAN address from WebRTC (needs analytics too).' }),
};

/** Either a redirect's visit to attach to, or a subdomain whose page starts a visit of its own: exactly one of them. */
const ConsentBody = z.union([
  z.strictObject({
    visit_id: z.uuid().meta({
      description:
        'The `lt_visit` parameter the redirect appended to the target URL: the tracker attaches to that visit. An id that is not a ' +
        'redirect of the last 24 hours answers 404 `not_found`.',
    }),
    ...consentChoice,
  }),
  z.strictObject({
    subdomain: z
      .string()
      .regex(SUBDOMAIN_LABEL, rule('subdomain_name'))
      .meta({ description: 'Without visit_id: the subdomain whose page the tracker runs on; the tracker then starts a visit of its own.' }),
    ...consentChoice,
    page: z
      .strictObject({ referrer: z.string().max(VISIT_TEXT_MAX.referrer).optional(), query: z.string().max(VISIT_TEXT_MAX.query).optional() })
      .optional()
      .meta({ description: "The page's referrer and query string (UTM parameters)." }),
  }),
]);

const ConsentSchema = z
  .object({
    visit_id: z
      .uuid()
      .nullable()
      .meta({
        description:
          'The visit the consent belongs to (new for a visit the tracker started). Null for a refusal without `visit_id`: nothing is ' +
          'stored, so there is no visit (a later consent with `subdomain` starts one).',
      }),
    analytics: z.boolean(),
    lan_ip: z.boolean().meta({ description: 'As recorded: true only with analytics.' }),
    token: z.string().nullable().meta({ description: 'Consent token for /tracker/collect; null when analytics was refused.' }),
    expires_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'TrackerConsent' });

const CollectSchema = z.object({ visit_id: z.uuid(), accepted: z.literal(true) }).meta({ id: 'TrackerCollect' });

const tokenField = z
  .string()
  .max(2000)
  .optional()
  .meta({ description: 'The consent token from POST /tracker/consent. Without a valid one: 403 `forbidden`, nothing stored.' });

export interface TrackerDeps {
  beacons: BeaconProducer;
  tokens: ConsentTokens;
  /** The site origins each subdomain's tracker accepts (in memory; see tracker-origins.ts). */
  origins: TrackerOrigins;
}

/**
 * The tracker's endpoints on the ingest nodes: the script, consent and collect. Consent is checked
 * from the signed token alone (no database); nothing sent here can change a visit's `ip_public`.
 */
export function trackerRoutes({ beacons, tokens, origins }: TrackerDeps): RouteDef[] {
  const script = readFileSync(TRACKER_JS, 'utf8');

  /**
   * A subdomain that lists tracker origins takes requests from those sites only: the Origin header,
   * or without one the Referer's origin, must be listed (neither: refused). The CORS answer then
   * names that origin alone (Vary: Origin); a refusal carries none. An empty list leaves CORS open.
   */
  const checkSite = async (subdomain: string, request: FastifyRequest, reply: FastifyReply) => {
    const allowed = await origins.of(subdomain);
    if (allowed.size === 0) return;
    const site = requestSiteOrigin(request.headers);
    reply.header('Vary', 'Origin');
    if (site === undefined || !allowed.has(site)) {
      reply.removeHeader('Access-Control-Allow-Origin');
      throw new AppError(
        'forbidden',
        { reason: 'origin_not_allowed', origin: site ?? null },
        { messageKey: 'error.forbidden.origin_not_allowed', params: { origin: site ?? '-' } },
      );
    }
    reply.header('Access-Control-Allow-Origin', site);
  };
  const publish = (message: BeaconMessage) => {
    if (!beacons.enqueue(message)) throw new AppError('service_unavailable', { reason: 'the message log is not taking messages; retry later' });
  };

  /** Collect: the consent first, then the signals under it (a LAN address only with its own consent). */
  const collect = async (
    token: string | undefined,
    signals: Signals,
    { respond, request, reply }: { respond: { meta(fields: Record<string, unknown>): void }; request: FastifyRequest; reply: FastifyReply },
  ) => {
    const consent = token ? await tokens.verify(token) : undefined;
    if (!consent || !consent.analytics) {
      throw new AppError('forbidden', { reason: 'consent_required' }, { messageKey: 'error.forbidden.consent_required' });
    }
    if (consent.subdomain) await checkSite(consent.subdomain, request, reply);
    const { lan_ip: lanIp, ...rest } = signals;
    if (lanIp !== undefined && !consent.lanIp) respond.meta({ ignored: ['lan_ip'] });
    publish({
      type: 'collect',
      visit_id: consent.visitId,
      ts: new Date().toISOString(),
      analytics: true,
      lan_ip: consent.lanIp,
      signals: consent.lanIp && lanIp !== undefined ? { ...rest, lan_ip: lanIp } : rest,
    });
    return { visit_id: consent.visitId, accepted: true as const };
  };
  const collectKey = (request: { ip: string }, token: unknown) => `${request.ip}|${visitIdOfToken(token) ?? '-'}`;

  return [
    defineRoute({
      operationId: 'trackerScript',
      method: 'GET',
      path: '/tracker.js',
      summary: 'The tracker script',
      description:
        'A few KB of dependency-free JavaScript. It sends nothing by itself: the page calls `LinkTracker.consent({ analytics, lan_ip })` ' +
        'from its own consent dialog; with analytics consent the script collects time zone, screen, network information and capabilities ' +
        '(and the WebRTC LAN address only with `lan_ip` consent). On a target page reached through a link with `append_visit_id` it ' +
        'attaches to that visit (`lt_visit`); elsewhere `<script src=…/tracker.js data-subdomain="name">` starts a visit of its own.',
      tags,
      auth: { kind: 'none' },
      bucket: null,
      raw: { contentType: 'application/javascript; charset=utf-8', description: 'The script.' },
      response: z.string(),
      handler: async ({ reply }) => {
        reply.header('Cache-Control', 'public, max-age=3600');
        return { contentType: 'application/javascript; charset=utf-8', body: script };
      },
    }),
    defineRoute({
      operationId: 'trackerConsent',
      method: 'POST',
      path: '/tracker/consent',
      summary: 'Record a consent decision; with analytics consent, answer a short-lived consent token',
      description:
        "With `visit_id` the tracker attaches to a redirect's visit and the decision is recorded on it (refusals too: only the consent " +
        'flags, no personal data is added). With `subdomain` and analytics consent it starts a visit of its own, whose `ip_public` is ' +
        "this request's address (from TRUST_PROXY peers only); a refusal with `subdomain` stores nothing at all (no visit, no address, " +
        'user agent, referrer or UTM values; `visit_id` null): statistics count the visits a visitor consented to. The token ' +
        '(TRACKER_CONSENT_TTL seconds) is checked by any ingest node without a database. CORS is open (`*`, no credentials), unless ' +
        "the `subdomain` lists `tracker_origins`: then only a listed site's Origin (or, without an Origin header, its Referer's origin) " +
        'is taken, answered with that origin in Access-Control-Allow-Origin and `Vary: Origin`; any other site, or a request naming ' +
        'none, gets 403 `forbidden` (reason `origin_not_allowed`, no CORS header) and nothing is stored. A `visit_id` is checked by no ' +
        "origin list: the id from the link's redirect is the proof, and the target page may be any site. A `text/plain` body holding " +
        'JSON is accepted so that browsers need no preflight (preflights are answered for any origin: they carry no data). Rate bucket ' +
        '`track`, keyed by IP and visit id.',
      tags,
      auth: { kind: 'none' },
      bucket: 'track',
      rateKey: (request) => {
        const visitId = (request.body as { visit_id?: unknown } | undefined)?.visit_id;
        return `${request.ip}|${typeof visitId === 'string' ? visitId.slice(0, 64) : 'new'}`;
      },
      body: ConsentBody,
      response: ConsentSchema,
      links: {
        Collect: { operationId: 'trackerCollectPost', requestBody: { token: '$response.body#/data/token' }, description: 'The signals under this consent.' },
      },
      errors: ['service_unavailable', 'not_found', 'forbidden'],
      handler: async ({ body, request, reply }) => {
        const now = Date.now();
        if ('subdomain' in body) await checkSite(body.subdomain, request, reply);
        if ('visit_id' in body && !isRecentVisitId(body.visit_id)) {
          throw new AppError('not_found', { visit_id: 'no redirect of the last 24 hours has this id (the lt_visit parameter)' });
        }
        const analytics = body.analytics;
        // A refusal of a visit the tracker would start leaves nothing: no visit to record the decision on, no personal data.
        if (!('visit_id' in body) && !analytics) return { visit_id: null, analytics, lan_ip: false, token: null, expires_at: null };
        const visitId = 'visit_id' in body ? body.visit_id : uuidv7At(now);
        const lanIp = analytics && body.lan_ip;
        publish({
          type: 'consent',
          visit_id: visitId,
          ts: new Date(now).toISOString(),
          analytics,
          lan_ip: lanIp,
          ...('subdomain' in body
            ? {
                own_visit: {
                  subdomain: body.subdomain,
                  ip_public: request.ip,
                  user_agent: visitText(request.headers['user-agent'], 'user_agent'),
                  accept_language: visitText(request.headers['accept-language'], 'accept_language'),
                  referrer: body.page?.referrer ?? '',
                  query: body.page?.query ?? '',
                },
              }
            : {}),
        });
        const issued = analytics ? await tokens.issue({ visitId, analytics, lanIp, ...('subdomain' in body ? { subdomain: body.subdomain } : {}) }) : undefined;
        return { visit_id: visitId, analytics, lan_ip: lanIp, token: issued?.token ?? null, expires_at: issued?.expiresAt.toISOString() ?? null };
      },
    }),
    defineRoute({
      operationId: 'trackerCollectPost',
      method: 'POST',
      path: '/tracker/collect',
      summary: "Send the beacon's signals under a consent token (202)",
      description:
        'Without a valid consent token (absent, forged, expired, or analytics refused) → 403 `forbidden`, nothing stored. Under the ' +
        "token of a visit the tracker started, the subdomain's `tracker_origins` apply as on consent (403 `forbidden`, reason " +
        '`origin_not_allowed`). A `lan_ip` ' +
        'without `lan_ip` consent is not stored (`meta.ignored`). `ip_public` cannot be sent: the visit keeps the address the platform saw.',
      tags,
      auth: { kind: 'none' },
      bucket: 'track',
      rateKey: (request) => collectKey(request, (request.body as { token?: unknown } | undefined)?.token),
      body: SignalsSchema.extend({ token: tokenField }),
      response: CollectSchema,
      status: 202,
      errors: ['service_unavailable', 'forbidden'],
      handler: async ({ body, respond, request, reply }) => {
        const { token, ...signals } = body;
        return collect(token, signals, { respond, request, reply });
      },
    }),
    defineRoute({
      operationId: 'trackerCollectGet',
      method: 'GET',
      path: '/tracker/collect',
      summary: 'The same as POST /tracker/collect, for clients that can only send a GET (202)',
      description: 'The signals are the JSON of the POST body (without the token) in `data`.',
      tags,
      auth: { kind: 'none' },
      bucket: 'track',
      rateKey: (request) => collectKey(request, (request.query as { token?: unknown } | undefined)?.token),
      query: z.strictObject({
        token: tokenField,
        data: z.string().max(8000).optional().meta({ description: 'JSON of the signals (time zone, screen, network, capabilities, lan_ip).' }),
      }),
      jsonQuery: { name: 'data', schema: SignalsSchema, component: 'TrackerSignals' },
      response: CollectSchema,
      status: 202,
      errors: ['service_unavailable', 'forbidden'],
      handler: async ({ query, respond, locale, request, reply }) => {
        let data: unknown = {};
        if (query.data !== undefined) {
          const parsed = parseClientJson(query.data, 'data');
          if (!parsed) throw new AppError('validation_error', { data: rule('json') });
          data = parsed.value;
        }
        const { query: signals } = validateRequest([{ part: 'query', schema: SignalsSchema, input: data }], locale);
        return collect(query.token, signals as Signals, { respond, request, reply });
      },
    }),
  ];
}
