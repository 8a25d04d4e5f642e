/** The columns of a link row a redirect record is made of (redirect caches read only these). */
export const REDIRECT_LINK_COLUMNS = [
    'id',
    'owner_id',
    'subdomain',
    'slug',
    'target_url',
    'redirect_type',
    'append_visit_id',
    'expires_at',
    'max_visits',
    'limit_reached_at',
    'version',
];
/** The redirect record of a stored link row. */
export function toRedirectLink(row) {
    return {
        id: row.id,
        owner_id: row.owner_id,
        subdomain: row.subdomain,
        slug: row.slug,
        target_url: row.target_url,
        redirect_type: row.redirect_type,
        append_visit_id: row.append_visit_id,
        expires_at: row.expires_at?.toISOString() ?? null,
        max_visits: row.max_visits,
        limit_reached: row.limit_reached_at !== null,
        version: Number(row.version),
    };
}
/** Channel of link-change notices on the shared cache (Redis pub/sub, or in-process). */
const LINK_NOTICES_CHANNEL = 'links.changed';
/**
 * Publishes a link-change notice to every node (Redis pub/sub when nodes share Redis, in-process
 * otherwise). A failed publish is counted and logged, not thrown: the change is stored, and caches
 * bound how long they trust an entry without a notice.
 */
export async function publishLinkNotice(deps, notice) {
    try {
        await deps.cache.publish(LINK_NOTICES_CHANNEL, JSON.stringify({ ...notice, at: Date.now() }));
    }
    catch (error) {
        deps.metrics.eventPublishFailures.inc({ event: `link_notice.${notice.kind}` });
        deps.log.error({ err: error, link_id: notice.link.id }, 'link-change notice could not be published');
    }
}
/** Subscribes to link-change notices; resolves with a function that unsubscribes. */
export function subscribeLinkNotices(cache, handler) {
    return cache.subscribe(LINK_NOTICES_CHANNEL, (message) => handler(JSON.parse(message)));
}
//# sourceMappingURL=link-notices.js.map