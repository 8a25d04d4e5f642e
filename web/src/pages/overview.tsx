// Overview: for the last 7 or 30 days, the account's totals and each subdomain's, with a daily
// trend line (GET /api/v1/stats/user/me and /api/v1/stats/subdomain/{name}, in the viewer's zone),
// and the visitors right now (GET /api/v1/stats/live), kept current while the page is visible.
import { useEffect, useState } from 'preact/hooks';
import { api, load, type Schemas } from '../api/client.js';
import { formatNumber, viewerTimeZone } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { Async, Empty, PageHeader, Sparkline, useLoad } from '../app/ui.js';

type Report = Schemas['StatsReport'];
type Live = Schemas['LiveStats'];
const RANGES = [7, 30] as const;
/** How often "right now" is asked again while the page is visible. */
const LIVE_POLL_MS = 15_000;

/**
 * Visitors of the last 5 minutes (GET /api/v1/stats/live), asked again every 15 s while the page is
 * visible (a hidden tab asks nothing, and asks at once when it comes back). Undefined until the first
 * answer, and after a failed one: the figure is left out rather than shown stale.
 */
function useLive(): Live | undefined {
  const [live, setLive] = useState<Live>();
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const controller = new AbortController();
    const round = async () => {
      clearTimeout(timer);
      if (stopped || document.visibilityState !== 'visible') return;
      try {
        const data = await load(api.GET('/api/v1/stats/live', { signal: controller.signal }));
        if (!stopped) setLive(data);
      } catch {
        if (!stopped) setLive(undefined);
      }
      if (!stopped) timer = setTimeout(() => void round(), LIVE_POLL_MS);
    };
    const onVisibility = () => void round();
    void round();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      stopped = true;
      clearTimeout(timer);
      controller.abort();
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, []);
  return live;
}

/** "N visitors right now" (the last 5 minutes), or nothing before the first answer. */
function RightNow({ figures }: { figures: { visitors: number } | undefined }) {
  const { t, locale } = useI18n();
  if (!figures) return null;
  return (
    <p class={`right-now${figures.visitors > 0 ? ' right-now-active' : ''}`} data-visitors={figures.visitors}>
      <span class="right-now-dot" aria-hidden="true" />
      {figures.visitors === 1 ? t('overview.live_one') : t('overview.live_many', { count: formatNumber(locale, figures.visitors) })}
    </p>
  );
}

async function report(scope: 'subdomain' | 'user', id: string, days: number, signal: AbortSignal): Promise<Report> {
  const since = new Date(Date.now() - days * 86_400_000).toISOString();
  return load(
    api.GET('/api/v1/stats/{scope}/{id}', { params: { path: { scope, id }, query: { since, granularity: 'day', tz: viewerTimeZone(), limit: 1 } }, signal }),
  );
}

function Totals({ totals }: { totals: Report['totals'] }) {
  const { t, locale } = useI18n();
  return (
    <dl class="totals">
      <div>
        <dt>{t('overview.visits')}</dt>
        <dd>{formatNumber(locale, totals.visits)}</dd>
      </div>
      <div>
        <dt>{t('overview.unique')}</dt>
        <dd>{formatNumber(locale, totals.unique_visitors)}</dd>
      </div>
      <div>
        <dt>{t('overview.bots')}</dt>
        <dd>{formatNumber(locale, totals.bots)}</dd>
      </div>
      <div>
        <dt>{t('overview.attacks')}</dt>
        <dd>{formatNumber(locale, totals.attacks)}</dd>
      </div>
    </dl>
  );
}

export function OverviewPage() {
  const { t } = useI18n();
  const [days, setDays] = useState<(typeof RANGES)[number]>(7);
  const live = useLive();
  const loaded = useLoad(
    async (signal) => {
      const [subdomains, account] = await Promise.all([
        load(api.GET('/api/v1/subdomains', { params: { query: { limit: 200 } }, signal })),
        report('user', 'me', days, signal),
      ]);
      const reports = await Promise.all(subdomains.subdomains.map((subdomain) => report('subdomain', subdomain.name, days, signal)));
      return { account, subdomains: subdomains.subdomains.map((subdomain, index) => ({ subdomain, report: reports[index]! })) };
    },
    [days],
  );
  return (
    <>
      <PageHeader title={t('overview.title')}>
        <div class="segmented" role="group" aria-label={t('overview.range')}>
          {RANGES.map((option) => (
            <button key={option} type="button" aria-pressed={days === option} onClick={() => setDays(option)}>
              {t('overview.last_days', { days: option })}
            </button>
          ))}
        </div>
      </PageHeader>
      <Async loaded={loaded}>
        {({ account, subdomains }) =>
          subdomains.length === 0 ? (
            <Empty>
              <p>{t('overview.empty')}</p>
              <a class="button button-primary" href="/subdomains">
                {t('overview.claim')}
              </a>
            </Empty>
          ) : (
            <>
              <section class="card" aria-labelledby="overview-account">
                <h2 id="overview-account">{t('overview.account')}</h2>
                <RightNow figures={live} />
                <Totals totals={account.totals} />
                <Sparkline values={account.series.map((point) => point.visits)} label={t('overview.trend', { name: t('overview.account') })} width={320} />
              </section>
              <ul class="cards">
                {subdomains.map(({ subdomain, report: data }) => (
                  <li key={subdomain.name} class="card">
                    <h2>
                      <a href={`/stats/subdomain/${encodeURIComponent(subdomain.name)}`} aria-label={t('overview.open_stats', { name: subdomain.name })}>
                        {subdomain.name}
                      </a>
                    </h2>
                    {subdomain.title ? <p class="muted">{subdomain.title}</p> : null}
                    <RightNow figures={live?.subdomains.find((row) => row.name === subdomain.name)} />
                    <Totals totals={data.totals} />
                    <Sparkline values={data.series.map((point) => point.visits)} label={t('overview.trend', { name: subdomain.name })} />
                  </li>
                ))}
              </ul>
            </>
          )
        }
      </Async>
    </>
  );
}
