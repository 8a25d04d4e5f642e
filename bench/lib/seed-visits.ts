import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Config } from '#shared/config.js';
import type { Context } from '#shared/context.js';

export interface SeedPlan {
  /** Visits in all. */
  total: number;
  /** The first `mine` go to the measured owner's subdomain, the rest to 40 other owners' subdomains. */
  mine: number;
  /** Spread over the last `days` days. */
  days: number;
  ownerId: string;
  subdomain: string;
  /** The link that gets the first `hotRows` visits. */
  hot: string;
  hotRows: number;
  /** The subdomain's links (at least 200): the measured subdomain's other visits spread over links[1…199]. */
  links: string[];
}

/**
 * Generates visits inside ClickHouse (INSERT … SELECT FROM numbers(), a million at a time), so the
 * rollup views fill as the enricher's inserts would fill them: 1 in 97 an attack, 1 in 50 a bot,
 * ten countries, eight cities, five browsers and systems, four referrers and UTM sources, about
 * three million distinct visitors.
 */
export async function seedVisits(context: Pick<Context, 'analytics'>, plan: SeedPlan): Promise<void> {
  const { total, mine, days, hotRows } = plan;
  const chunk = 1_000_000;
  for (let from = 0; from < total; from += chunk) {
    const count = Math.min(chunk, total - from);
    await context.analytics.client.command({
      query: `INSERT INTO visits (visit_id, ts, kind, owner_id, subdomain, link_id, slug, ip_public, country, region, city, user_agent, browser, browser_version, os, device_type, referrer, referrer_host, utm_source, visitor_hash, is_bot, is_attack)
        SELECT generateUUIDv7(), now64(3) - toIntervalMillisecond((number * 2654435761) % ${days * 86_400_000}),
          multiIf(number % 97 = 0, 'attack', number % 50 = 0, 'bot', 'visit'),
          if(number < ${mine}, {owner:String}, concat('other-owner-', toString(number % 40))),
          if(number < ${mine}, {subdomain:String}, concat('other', toString(number % 40))),
          multiIf(number % 97 = 0, '', number < ${hotRows}, {hot:String}, number < ${mine}, {links:Array(String)}[1 + number % 199 + 1], concat('l_other', toString(number % 400))),
          concat('s', toString(number % 200)),
          IPv4NumToString(toUInt32((number * 2654435761) % 4294967296)),
          ['US','DE','FR','GB','JP','BR','IN','CN','CA','ES'][number % 10 + 1],
          ['R1','R2','R3'][number % 3 + 1],
          ['Paris','Berlin','London','Tokyo','Austin','Lyon','Osaka','Madrid'][number % 8 + 1],
          'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
          ['Chrome','Firefox','Safari','Edge','Opera'][number % 5 + 1], '120',
          ['Windows','macOS','Linux','Android','iOS'][number % 5 + 1],
          ['desktop','mobile','tablet'][number % 3 + 1],
          ['https://www.google.com/','https://t.co/x','','https://news.ycombinator.com/'][number % 4 + 1],
          ['www.google.com','t.co','','news.ycombinator.com'][number % 4 + 1],
          ['','newsletter','twitter','ads'][number % 4 + 1],
          hex(cityHash64(number % 3000000)),
          number % 50 = 0 AND number % 97 != 0, number % 97 = 0
        FROM numbers(${from}, ${count})`,
      query_params: { owner: plan.ownerId, subdomain: plan.subdomain, hot: plan.hot, links: plan.links },
    });
  }
}

/**
 * `seedVisits` in a child process (the compiled seed-visits-child.js beside this file), on the
 * analytics store of a platform's configuration while that platform is stopped (one chDB per folder):
 * chDB, its threads and its library's pages stay out of the calling process.
 */
export function seedVisitsInChild(analytics: Config['analytics'], plan: SeedPlan): Promise<void> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'seed-visits-child.js'), JSON.stringify(analytics), JSON.stringify(plan)], {
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`seeding the visits failed (exit ${code}): ${stderr.slice(-2_000)}`))));
  });
}
