import type { FastifyInstance } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import type { LogMessage } from '#shared/message-log/message-log.js';
import { claimSubdomain, createLink, type TestOwner } from './owners.js';

/** A browser's user agent: visits with it are people's visits (not bots). */
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0';

/** A valid raw visit as the ingest edge publishes it (of no real owner or link unless overridden). */
export function rawVisit(subdomain: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    visit_id: uuidv7(),
    ts: new Date().toISOString(),
    kind: 'visit',
    owner_id: 'owner-1',
    subdomain,
    link_id: `${subdomain}-link`,
    slug: 'promo',
    ip_public: '203.0.113.7',
    user_agent: 'Mozilla/5.0 (X11; Linux x86_64)',
    referrer: '',
    accept_language: 'en-GB,en;q=0.8',
    query: '',
    ...overrides,
  };
}

/**
 * `count` people's visits of an owner's link (slug `go`), each of its own visitor (`net`.1, .2, …),
 * a second apart within the last hour; `overrides` apply to every one.
 */
export function peopleVisits(
  ownerId: string,
  subdomain: string,
  linkId: string,
  count: number,
  { net = '198.51.100', ...overrides }: Record<string, unknown> & { net?: string } = {},
) {
  const start = Date.now() - 30 * 60_000;
  return Array.from({ length: count }, (_, i) => {
    const ts = start + i * 1000 + Math.floor(Math.random() * 1000);
    return {
      visit_id: uuidv7({ msecs: ts }),
      ts: new Date(ts).toISOString(),
      kind: 'visit',
      owner_id: ownerId,
      subdomain,
      link_id: linkId,
      slug: 'go',
      ip_public: `${net}.${i + 1}`,
      user_agent: FIREFOX,
      referrer: '',
      accept_language: 'en',
      query: '',
      ...overrides,
    };
  });
}

/** The `i`-th consent beacon that starts a visit of the subdomain (a second apart, 20 minutes ago), as the edge publishes it on `tracker.raw`. */
export function consentMessage(subdomain: string, i: number): LogMessage {
  const ts = Date.now() - 20 * 60_000 + i * 1000;
  const visitId = uuidv7({ msecs: ts });
  return {
    key: visitId,
    value: JSON.stringify({
      type: 'consent',
      visit_id: visitId,
      ts: new Date(ts).toISOString(),
      analytics: true,
      lan_ip: false,
      own_visit: { subdomain, ip_public: `203.0.113.${i + 1}`, user_agent: FIREFOX, accept_language: 'en', referrer: '', query: '' },
    }),
  };
}

/** Claims a subdomain for the owner and makes one link on it (slug `go`). */
export async function subdomainWithLink(app: FastifyInstance, owner: TestOwner): Promise<{ subdomain: string; linkId: string }> {
  const subdomain = await claimSubdomain(app, owner);
  const link = await createLink(app, owner, { subdomain, slug: 'go', target_url: 'https://example.com/' });
  return { subdomain, linkId: link.id };
}
