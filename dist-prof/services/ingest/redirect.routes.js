import { uuidv7At } from '../../shared/ids.js';
import { counterChildren } from '../../shared/metrics.js';
import { AppError, retryLater } from '../../shared/errors.js';
import { sendError } from '../../shared/http/error-response.js';
import { ASSIGNED_REQUEST_ID, clientAddressOf, errorOptionsOf, incomingRequestId, localizedByHeaders, requestRecorder } from '../../shared/http/fastify-base.js';
import { rateLimitHeaderList, rateLimitHeaders } from '../../shared/http/rate-limit.js';
import { VISIT_PARAM } from '../../shared/tracker/beacon.js';
import { classifyAttack } from '../../shared/visits/attack.js';
import { visitText } from '../../shared/visits/raw-visit.js';
import { subdomainOf } from '../../shared/links/hosts.js';
import { SLUG } from '../api/links/links.service.js';
/** The target with `lt_visit=<visit id>` appended to its query, before any fragment. */
function withVisitId(target, visitId) {
    const hash = target.indexOf('#');
    const base = hash < 0 ? target : target.slice(0, hash);
    const separator = base.includes('?') ? (base.endsWith('?') || base.endsWith('&') ? '' : '&') : '?';
    return `${base}${separator}${VISIT_PARAM}=${visitId}${hash < 0 ? '' : target.slice(hash)}`;
}
const ROUTE_LABEL = '/{slug}';
/**
 * Decides short-host requests (`GET|HEAD /{slug}`). Nothing here waits for Postgres, ClickHouse
 * or the broker: the link comes from the in-memory cache (a miss loads once), the rate limit is
 * local or one Redis call, and the visit is handed to the buffered producer before the answer
 * leaves. Attack-looking requests are refused 404 and recorded as attack visits.
 */
function createRedirector(deps) {
    const { context, links, visits, limiter } = deps;
    const { metrics, log } = context;
    const answered = counterChildren(metrics.redirects, 'status');
    const refusedByLimit = counterChildren(metrics.rateLimited, 'bucket')('redirect');
    const refusal = (error, rateLimit) => {
        answered(String(error.status)).inc();
        return { kind: 'refusal', error, rateLimit };
    };
    const visitOf = ({ request, query }, kind, ownerId, subdomain, linkId, slug, expectsBeacon) => ({
        // One clock reading: the visit id's UUIDv7 time is the visit's time (the beacon relies on it).
        visit_id: request.visitId,
        ts: new Date(request.at).toISOString(),
        kind,
        owner_id: ownerId,
        subdomain,
        link_id: linkId,
        slug,
        expects_beacon: expectsBeacon,
        ip_public: request.ip,
        user_agent: visitText(request.headers['user-agent'], 'user_agent'),
        referrer: visitText(request.headers.referer, 'referrer'),
        accept_language: visitText(request.headers['accept-language'], 'accept_language'),
        query: visitText(query, 'query'),
    });
    const decide = (asked, slug, link, decision) => {
        if (!decision.allowed) {
            refusedByLimit.inc();
            return refusal(retryLater('rate_limited', decision.resetSec, { bucket: 'redirect', limit: decision.limit }), decision);
        }
        if (!link)
            return refusal(new AppError('not_found', { path: asked.path.slice(0, 200) }), decision);
        if (link.expires_at !== null && Date.parse(link.expires_at) <= Date.now())
            return refusal(new AppError('gone', { slug, reason: 'expired' }), decision);
        if (link.limit_reached)
            return refusal(new AppError('gone', { slug, reason: 'limit_reached' }), decision);
        const visit = visitOf(asked, 'visit', link.owner_id, asked.request.subdomain, link.id, slug, link.append_visit_id);
        visits.enqueue(visit);
        answered(String(link.redirect_type)).inc();
        return { kind: 'redirect', status: link.redirect_type, location: link.append_visit_id ? withVisitId(link.target_url, visit.visit_id) : link.target_url, rateLimit: decision };
    };
    const check = (asked, slug, link) => {
        // Unknown slugs count in the bucket too (under no link), so guessing slugs is limited.
        const checked = limiter.check('redirect', `${asked.request.ip}|${link?.id ?? '-'}`);
        return checked instanceof Promise ? checked.then((decision) => decide(asked, slug, link, decision)) : decide(asked, slug, link, checked);
    };
    return (request) => {
        const { url, subdomain } = request;
        const queryAt = url.indexOf('?');
        const asked = { request, path: queryAt < 0 ? url : url.slice(0, queryAt), query: queryAt < 0 ? '' : url.slice(queryAt + 1) };
        const attack = classifyAttack(url);
        if (attack || !subdomain) {
            if (attack) {
                visits.enqueue(visitOf(asked, 'attack', '', subdomain ?? (request.hostname ?? '').slice(0, 63), '', asked.path.slice(0, 200), false));
                log.info({ request_id: request.id, attack, ip: request.ip, url: url.slice(0, 500) }, 'attack attempt');
            }
            return refusal(new AppError('not_found', { path: asked.path.slice(0, 200) }));
        }
        const slug = asked.path.slice(1).toLowerCase();
        const found = SLUG.test(slug) ? links.lookup(subdomain, slug) : null;
        // Awaited only when pending (a cache miss, the Redis store): a hit decides synchronously.
        return found instanceof Promise ? found.then((link) => check(asked, slug, link)) : check(asked, slug, found);
    };
}
/** Where the short-host listener leaves a request it decided but does not answer itself (a refusal, a failure). */
const DECIDED = Symbol('shortHostDecided');
/**
 * The short hosts `{subdomain}.{BASE_DOMAIN}`: `GET|HEAD /{slug}` redirects. Registers the Fastify
 * route (which renders refusals, and serves requests that reach the app directly, as `inject`
 * does) and returns the raw listener the server uses first.
 */
export function registerShortHosts(app, deps) {
    const { context } = deps;
    const { config } = context;
    const errorOptions = errorOptionsOf(config);
    const redirector = createRedirector(deps);
    const clientAddress = clientAddressOf(config.trustProxy);
    const record = requestRecorder(context);
    const handler = async (request, reply) => {
        reply.header('X-Request-Id', request.id);
        const decided = request.raw[DECIDED];
        if (decided && 'failure' in decided)
            throw decided.failure;
        const at = Date.now();
        const outcome = decided?.outcome ??
            (await redirector({
                id: request.id,
                at,
                visitId: uuidv7At(at),
                url: request.url,
                ip: request.ip,
                subdomain: subdomainOf(request.hostname, config.baseDomain),
                hostname: request.hostname,
                headers: request.headers,
            }));
        if (outcome.rateLimit)
            reply.headers(rateLimitHeaders(outcome.rateLimit));
        if (outcome.kind === 'refusal')
            return sendError(localizedByHeaders(request), reply, outcome.error, errorOptions);
        return reply.code(outcome.status).header('Location', outcome.location).header('Cache-Control', 'private, max-age=0').send();
    };
    // GET also answers HEAD (Fastify's exposeHeadRoutes): same status and headers, no body.
    const routeConfig = { routeLabel: ROUTE_LABEL };
    app.route({ method: 'GET', url: '/*', config: routeConfig, handler });
    app.route({ method: 'GET', url: '/', config: routeConfig, handler });
    let closing = false;
    app.addHook('preClose', async () => {
        closing = true;
    });
    const fastify = app.routing.bind(app);
    /** Hands a request the listener decided but does not answer on to Fastify, keeping its id. */
    const handOn = (request, response, id, decided) => {
        request[DECIDED] = decided;
        request[ASSIGNED_REQUEST_ID] = id;
        fastify(request, response);
    };
    const answer = (request, response, asked, started, outcome) => {
        if (outcome.kind === 'refusal')
            return handOn(request, response, asked.id, { outcome });
        // Node's writeHead takes a flat [name, value, …] list fastest (no per-key walk of an object).
        const headers = rateLimitHeaderList(outcome.rateLimit);
        headers.push('X-Request-Id', asked.id, 'Location', outcome.location, 'Cache-Control', 'private, max-age=0', 'Content-Length', '0');
        response.writeHead(outcome.status, headers).end();
        record({
            id: asked.id,
            method: request.method,
            url: asked.url,
            route: ROUTE_LABEL,
            status: outcome.status,
            tookMs: performance.now() - started,
            ip: asked.ip,
            userAgent: asked.headers['user-agent'],
        });
    };
    return {
        fastify,
        serve(request, response, subdomain) {
            if (closing || (request.method !== 'GET' && request.method !== 'HEAD'))
                return fastify(request, response);
            const started = performance.now();
            const at = Date.now();
            // One UUIDv7 per request: the visit's id, and the request's id unless it brought its own.
            const visitId = uuidv7At(at);
            const { headers } = request;
            const asked = { id: incomingRequestId(headers) ?? visitId, at, visitId, url: request.url, ip: clientAddress(request), subdomain, headers };
            let outcome;
            try {
                outcome = redirector(asked);
            }
            catch (error) {
                return handOn(request, response, asked.id, { failure: error });
            }
            if (outcome instanceof Promise)
                outcome.then((decided) => answer(request, response, asked, started, decided), (failure) => handOn(request, response, asked.id, { failure }));
            else
                answer(request, response, asked, started, outcome);
        },
    };
}
//# sourceMappingURL=redirect.routes.js.map