// The run's data, made through the public HTTP API as an integration would: a staff account creates
// the owners (POST /api/v1/users); each signs in, makes an API token, claims subdomains and makes
// links with it. Names carry a run id, so runs against one BASE_URL do not collide.
import { randomBytes } from 'node:crypto';
import { client, type Answer } from '#tests/support/platform-process.js';
import type { Settings } from './settings.js';

export interface Owner {
  email: string;
  token: string;
  /** The subdomain the redirect scenario loads. */
  subdomain: string;
}

export interface Link {
  id: string;
  subdomain: string;
  /** The short host, `{subdomain}.{BASE_DOMAIN}`, sent as the Host header. */
  host: string;
  slug: string;
  target: string;
  /** The status its redirects answer (the link's redirect_type). */
  status: number;
  /** Its owner's API token (which reads its visits). */
  token: string;
}

export interface Seeded {
  owners: Owner[];
  /** Links of the redirect scenario: every owner's subdomain. */
  redirectLinks: Link[];
  /** The owner who pulls the CSV exports, and the links loaded meanwhile (a subdomain of theirs of its own). */
  exporter: Owner;
  exportLinks: Link[];
  /** The subdomain the beacons start their visits on (the last owner's). */
  beaconOwner: Owner;
  beaconSubdomain: string;
}

const SCOPES = ['links:read', 'links:write', 'stats:read', 'subdomain:write'];

/** The answer, or an error naming the step and what the platform said. */
function expectStatus(answer: Answer, status: number, step: string): Answer {
  if (answer.status !== status) throw new Error(`seeding, ${step}: ${answer.status} ${JSON.stringify(answer.json)}`);
  return answer;
}

/** The session cookie of a sign-in. */
async function signIn(call: ReturnType<typeof client>, credentials: { email: string; password: string }): Promise<string> {
  const login = expectStatus(await call('POST', '/auth/login', credentials), 200, `sign in as ${credentials.email}`);
  return login.headers
    .getSetCookie()
    .map((value) => value.split(';')[0])
    .join('; ');
}

export async function seed(base: string, admin: { email: string; password: string }, settings: Settings): Promise<Seeded> {
  const call = client(base);
  const run = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const adminCookie = await signIn(call, admin);

  const makeLinks = async (token: string, subdomain: string): Promise<Link[]> => {
    const auth = { authorization: `Bearer ${token}` };
    expectStatus(await call('POST', '/api/v1/subdomains', { name: subdomain }, auth), 201, `claim ${subdomain}`);
    const links: Link[] = [];
    for (let n = 1; n <= settings.linksPerSubdomain; n++) {
      const target = `https://example.com/landing/${n}`;
      const made = expectStatus(await call('POST', '/api/v1/links', { subdomain, target_url: target, slug: `l${n}` }, auth), 201, `link l${n} on ${subdomain}`);
      const link = made.json.data as { id: string; slug: string; redirect_type: number };
      links.push({ id: link.id, subdomain, host: `${subdomain}.${settings.baseDomain}`, slug: link.slug, target, status: link.redirect_type, token });
    }
    return links;
  };

  const owners: Owner[] = [];
  const redirectLinks: Link[] = [];
  for (let n = 1; n <= settings.owners; n++) {
    const credentials = { email: `loadtest-${run}-${n}@example.com`, password: randomBytes(18).toString('base64url') };
    expectStatus(
      await call('POST', '/api/v1/users', { ...credentials, display_name: `Load test owner ${n}` }, { cookie: adminCookie }),
      201,
      `create owner ${n}`,
    );
    const cookie = await signIn(call, credentials);
    const minted = expectStatus(await call('POST', '/api/v1/tokens', { name: `load test ${run}`, scopes: SCOPES }, { cookie }), 201, `token of owner ${n}`);
    const owner = { email: credentials.email, token: minted.json.data.token as string, subdomain: `lt-${run}-r${n}` };
    redirectLinks.push(...(await makeLinks(owner.token, owner.subdomain)));
    owners.push(owner);
  }
  const exporter = owners[0]!;
  const exportLinks = await makeLinks(exporter.token, `lt-${run}-x`);
  const beaconOwner = owners.at(-1)!;
  const beaconSubdomain = `lt-${run}-b`;
  expectStatus(
    await call('POST', '/api/v1/subdomains', { name: beaconSubdomain }, { authorization: `Bearer ${beaconOwner.token}` }),
    201,
    `claim ${beaconSubdomain}`,
  );
  return { owners, redirectLinks, exporter, exportLinks, beaconOwner, beaconSubdomain };
}
