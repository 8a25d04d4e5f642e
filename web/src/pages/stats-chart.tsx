// The time series of a report as a uPlot chart: humans, unique visitors, bots and attacks per hour
// or day, the x axis in the report's time zone, resized with its container. The canvas says nothing
// to a screen reader, so the chart carries an accessible name and the same figures as a table.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Schemas } from '../api/client.js';
import { formatNumber, formatTimeTicks } from '../app/format.js';
import { useI18n, type UiKey } from '../app/i18n.js';

type Point = Schemas['StatsPoint'];
type Granularity = 'hour' | 'day';

/** The series drawn, in the order of uPlot's data columns after x; `color` names a custom property of stats.css. */
export const SERIES: { key: keyof Omit<Point, 't'>; label: UiKey; color: string; dash?: number[]; fill?: string }[] = [
  // Humans filled: unique visitors often equal them, and a dashed line over a line would hide one.
  { key: 'visits', label: 'stats.humans', color: '--series-humans', fill: '--series-humans-fill' },
  { key: 'unique_visitors', label: 'stats.unique', color: '--series-unique', dash: [6, 4] },
  { key: 'bots', label: 'stats.bots', color: '--series-bots' },
  { key: 'attacks', label: 'stats.attacks', color: '--series-attacks' },
];

/** A period's start as the viewer reads it, in the report's zone. */
export function periodFormat(locale: string, tz: string, granularity: Granularity): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat(
    locale,
    granularity === 'hour' ? { timeZone: tz, dateStyle: 'medium', timeStyle: 'short' } : { timeZone: tz, dateStyle: 'medium' },
  );
}

const DAY_INCRS = [1, 2, 3, 7, 14, 28, 56, 91, 182, 364].map((days) => days * 86_400);

/** Taller on wide screens, never so tall a phone sees nothing else. */
const heightFor = (width: number) => Math.round(Math.min(320, Math.max(220, width * 0.42)));

/**
 * `previous`: the previous period's points (compare=previous), drawn point for point over this
 * period's (the nth beside the nth) as a dashed line of its humans, off until asked for.
 */
export function SeriesChart({
  series,
  previous,
  tz,
  granularity,
  label,
}: {
  series: Point[];
  previous?: Point[];
  tz: string;
  granularity: Granularity;
  label: string;
}) {
  const { t, locale } = useI18n();
  const holder = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const [shown, setShown] = useState<boolean[]>(() => SERIES.map(() => true));
  const [hovered, setHovered] = useState<number | null>(null);
  const [tableOpen, setTableOpen] = useState(false);
  const [overlay, setOverlay] = useState(false);
  const earlier = (index: number) => previous?.[index]?.visits ?? null;
  const format = useMemo(() => periodFormat(locale, tz, granularity), [locale, tz, granularity]);

  useEffect(() => {
    const element = holder.current;
    if (!element) return;
    const style = getComputedStyle(element);
    const color = (name: string) => style.getPropertyValue(name).trim() || style.color;
    const numbers = new Intl.NumberFormat(locale);
    const width = element.clientWidth || 320;
    const data: uPlot.AlignedData = [
      series.map((point) => Date.parse(point.t) / 1000),
      ...SERIES.map((line) => series.map((point) => point[line.key])),
      ...(previous ? [series.map((_point, index) => earlier(index))] : []),
    ];
    const axis = { stroke: color('--chart-text'), grid: { stroke: color('--chart-grid'), width: 1 }, ticks: { stroke: color('--chart-grid'), width: 1 } };
    const plot = new uPlot(
      {
        width,
        height: heightFor(width),
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), tz),
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_self, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] } },
        axes: [
          // Daily figures get ticks on whole days only (in the report's zone, through tzDate).
          // Labels through the one date formatter: the viewer's language, the report's zone (not uPlot's US {M}/{D}).
          {
            ...axis,
            space: 60,
            ...(granularity === 'day' ? { incrs: DAY_INCRS } : {}),
            values: (_self, splits, _axis, _space, step) => formatTimeTicks(locale, tz, splits, step),
          },
          {
            ...axis,
            incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 1e6, 1e7],
            values: (_self, splits) => splits.map((value) => numbers.format(value)),
            // Wide enough for the longest label drawn (about 7 px a character at this font), so 1,200,000 is not cut.
            size: (_self, values) => Math.max(40, 16 + 7.5 * Math.max(0, ...(values ?? []).map((value) => String(value).length))),
          },
        ],
        series: [
          {},
          ...SERIES.map((line, index) => ({
            label: t(line.label),
            stroke: color(line.color),
            width: 2,
            dash: line.dash,
            fill: line.fill ? color(line.fill) : undefined,
            show: shown[index],
          })),
          ...(previous ? [{ label: t('stats.previous_period'), stroke: color('--series-previous'), width: 2, dash: [2, 4], show: overlay }] : []),
        ],
        hooks: { setCursor: [(self) => setHovered(self.cursor.idx ?? null)] },
      },
      data,
      element,
    );
    chart.current = plot;
    const observer = new ResizeObserver(() => {
      const next = element.clientWidth;
      if (next > 0 && next !== plot.width) plot.setSize({ width: next, height: heightFor(next) });
    });
    observer.observe(element);
    return () => {
      observer.disconnect();
      plot.destroy();
      chart.current = null;
    };
    // `shown` and `overlay` are applied to a live chart by toggle(); a new chart starts from them.
  }, [series, previous, tz, granularity, locale]);

  const toggle = (index: number) => {
    const next = shown.map((value, at) => (at === index ? !value : value));
    setShown(next);
    chart.current?.setSeries(index + 1, { show: next[index] });
  };

  const toggleOverlay = () => {
    setOverlay(!overlay);
    chart.current?.setSeries(SERIES.length + 1, { show: !overlay });
  };

  const point = hovered !== null ? series[hovered] : undefined;
  const before = hovered !== null && overlay ? earlier(hovered) : null;
  return (
    <figure class="chart" data-granularity={granularity} data-tz={tz} data-points={series.length}>
      <figcaption class="visually-hidden">{t('stats.chart')}</figcaption>
      <div class="chart-legend" role="group" aria-label={t('stats.legend')}>
        {SERIES.map((line, index) => (
          <button key={line.key} type="button" class="button-small" aria-pressed={shown[index]} onClick={() => toggle(index)}>
            <span class={`swatch swatch-${line.key}`} aria-hidden="true" />
            {t(line.label)}
          </button>
        ))}
        {previous ? (
          <button type="button" class="button-small" aria-pressed={overlay} onClick={toggleOverlay}>
            <span class="swatch swatch-previous" aria-hidden="true" />
            {t('stats.previous_period')}
          </button>
        ) : null}
      </div>
      <p class="chart-readout muted">
        {point
          ? `${format.format(new Date(point.t))}: ${SERIES.map((line) => `${t(line.label)} ${formatNumber(locale, point[line.key])}`).join(' · ')}${
              before !== null ? ` · ${t('stats.previous_period')} ${formatNumber(locale, before)}` : ''
            }`
          : '\u00a0'}
      </p>
      <div class="chart-canvas" ref={holder} role="img" aria-label={label} />
      <details class="chart-table" onToggle={(event) => setTableOpen(event.currentTarget.open)}>
        <summary>{t('stats.chart_table')}</summary>
        {tableOpen ? (
          <div class="table-wrap">
            <table>
              <caption class="visually-hidden">{label}</caption>
              <thead>
                <tr>
                  <th scope="col">{t('stats.when')}</th>
                  {SERIES.map((line) => (
                    <th key={line.key} scope="col" class="num">
                      {t(line.label)}
                    </th>
                  ))}
                  {previous ? (
                    <th scope="col" class="num">
                      {t('stats.previous_humans')}
                    </th>
                  ) : null}
                </tr>
              </thead>
              <tbody>
                {series.map((row, index) => (
                  <tr key={row.t}>
                    <th scope="row">{format.format(new Date(row.t))}</th>
                    {SERIES.map((line) => (
                      <td key={line.key} class="num">
                        {formatNumber(locale, row[line.key])}
                      </td>
                    ))}
                    {previous ? <td class="num">{earlier(index) === null ? '—' : formatNumber(locale, earlier(index))}</td> : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </details>
    </figure>
  );
}
