// The statistics page's world map (issue 41): human visits by country on an SVG map drawn in the
// browser from Natural Earth's 1:110m countries (world-atlas, TopoJSON, about 105 KB, loaded with the
// map's own chunk the first time a report has countries), projected with d3-geo's Equal Earth. No
// tile server and no request beyond the dashboard's own origin: it works offline and under the
// dashboard's Content-Security-Policy. The countries with visits form a labelled group, each named
// with its count, for screen readers; the other countries are scenery (aria-hidden). The countries
// table below stays the full alternative (and the keyboard's way to filter). A country with visits
// filters the report when clicked, as its row in the table does.
import type { FeatureCollection } from 'geojson';
import { useLocation } from 'preact-iso';
import { useEffect, useRef, useState } from 'preact/hooks';
import { formatNumber } from '../app/format.js';
import { useI18n } from '../app/i18n.js';

/** A country's outline as an SVG path, by its ISO 3166-1 alpha-2 code ('' for an area without one). */
interface Shape {
  code: string;
  d: string;
}

const WIDTH = 960;
const HEIGHT = 470;
/** Colour steps of the scale (the accent colour's opacity), from the fewest visits to the most. */
const STEPS = [0.2, 0.4, 0.6, 0.8, 1];
/**
 * The atlas's shapes without an ISO numeric code, by their name there, with the alpha-2 code GeoIP
 * reports for visits from that area: Kosovo's own (XK), and Somaliland's and Northern Cyprus's
 * visits are counted in Somalia and Cyprus, so those shapes take the same colour.
 */
const UNCODED: Readonly<Record<string, string>> = { Kosovo: 'XK', Somaliland: 'SO', 'N. Cyprus': 'CY' };

let shapes: Promise<Shape[]> | undefined;

/** The countries' outlines, projected once per page load (the chunk and the data are fetched then). */
function loadShapes(): Promise<Shape[]> {
  shapes ??= (async () => {
    const [{ geoEqualEarth, geoPath }, { feature }, atlas, countries] = await Promise.all([
      import('d3-geo'),
      import('topojson-client'),
      import('world-atlas/countries-110m.json'),
      import('i18n-iso-countries'),
    ]);
    const topology = atlas.default as unknown as Parameters<typeof feature>[0];
    const collection = feature(topology, topology.objects.countries!) as unknown as FeatureCollection;
    const projection = geoEqualEarth().fitSize([WIDTH, HEIGHT], collection);
    const path = geoPath(projection);
    return collection.features.map((country) => ({
      // world-atlas names countries by their numeric ISO code ("276"); the visits by alpha-2 ("DE").
      code:
        (country.id !== undefined ? countries.numericToAlpha2(String(country.id)) : UNCODED[(country.properties as { name?: string } | null)?.name ?? '']) ||
        '',
      d: path(country) ?? '',
    }));
  })();
  shapes.catch(() => (shapes = undefined));
  return shapes;
}

/** The step of a count on a logarithmic scale up to `max` (visits spread over orders of magnitude). */
export const stepOf = (visits: number, max: number) =>
  max <= 1 ? STEPS.length - 1 : Math.min(STEPS.length - 1, Math.floor((Math.log(visits) / Math.log(max)) * (STEPS.length - 1) + 1e-9));

/**
 * The legend: the steps a whole count up to `max` reaches, each with the least count in it. A step
 * no count reaches is left out (with a maximum of 2, a count is in the first step or the last: the
 * legend says "from 1" and "from 2", not five swatches of which three can never be seen).
 */
export function legendOf(max: number): { opacity: number; from: number }[] {
  if (max < 1) return [];
  const legend: { opacity: number; from: number }[] = [];
  STEPS.forEach((opacity, index) => {
    // The least count of step `index` is about max^(index / (steps - 1)); floating point may put it one off.
    let from = max <= 1 ? 1 : Math.max(1, Math.floor(max ** (index / (STEPS.length - 1))) - 1);
    while (from <= max && stepOf(from, max) < index) from++;
    if (from <= max && stepOf(from, max) === index) legend.push({ opacity, from });
  });
  return legend;
}

export function WorldMap({
  items,
  countryName,
  hrefOf,
}: {
  /** Visits by country code, as the report's country breakdown gives them ('' is unknown, not drawn). */
  items: { value: string; visits: number }[];
  countryName: (code: string) => string;
  /** Where a click on a country leads (the report filtered by it), or undefined when it does not filter. */
  hrefOf: (code: string) => string | undefined;
}) {
  const { t, locale } = useI18n();
  const { route } = useLocation();
  const [state, setState] = useState<{ shapes?: Shape[]; failed?: boolean; loading?: boolean }>({});
  const figure = useRef<HTMLElement>(null);
  // The shapes (about 55 KB gzip with their code) are fetched once the map is about to be seen: the
  // page's first load, the report above the fold, does not wait for them.
  useEffect(() => {
    let live = true;
    const start = () => {
      setState({ loading: true });
      loadShapes().then(
        (loaded) => live && setState({ shapes: loaded }),
        () => live && setState({ failed: true }),
      );
    };
    const element = figure.current;
    if (!element || typeof IntersectionObserver === 'undefined') start();
    else {
      const observer = new IntersectionObserver(
        (entries) => {
          if (!entries.some((entry) => entry.isIntersecting)) return;
          observer.disconnect();
          start();
        },
        { rootMargin: '0px' },
      );
      observer.observe(element);
      return () => {
        live = false;
        observer.disconnect();
      };
    }
    return () => {
      live = false;
    };
  }, []);
  const visits = new Map(items.filter((item) => item.value !== '').map((item) => [item.value.toUpperCase(), item.visits]));
  const max = Math.max(0, ...visits.values());
  const placed = [...visits.values()].reduce((sum, n) => sum + n, 0);
  const titleOf = (code: string, count: number) =>
    count === 1
      ? t('stats.map_country_one', { name: countryName(code) })
      : t('stats.map_country', { name: countryName(code), visits: formatNumber(locale, count) });

  return (
    <figure class="world-map" data-testid="world-map" ref={figure}>
      {state.failed ? (
        <p class="muted">{t('stats.map_failed')}</p>
      ) : !state.shapes ? (
        // Until it is near the viewport, an empty frame of the map's size (no loading indicator: nothing loads yet).
        <div class="world-map-frame">
          {state.loading ? (
            <p class="state state-loading" role="status">
              <span class="spinner" aria-hidden="true" />
              {t('stats.map_loading')}
            </p>
          ) : null}
        </div>
      ) : (
        // Without a country to colour the map is a picture only (the caption says so); otherwise the
        // coloured countries are a named group of images, one for each, named with its visits.
        <svg
          viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
          focusable="false"
          {...(placed === 0 ? { 'aria-hidden': 'true' } : { role: 'group', 'aria-label': t('stats.map_label') })}
        >
          {state.shapes.map((shape, index) => {
            const count = visits.get(shape.code) ?? 0;
            const href = count > 0 ? hrefOf(shape.code) : undefined;
            const title = shape.code ? titleOf(shape.code, count) : '';
            return (
              <g key={index} {...(count > 0 ? { role: 'img', 'aria-label': title } : { 'aria-hidden': 'true' })}>
                <path
                  d={shape.d}
                  data-country={shape.code || undefined}
                  data-visits={count || undefined}
                  class={count > 0 ? (href ? 'country country-visited country-link' : 'country country-visited') : 'country'}
                  style={count > 0 ? { fillOpacity: STEPS[stepOf(count, max)] } : undefined}
                  // Not focusable (the table is the keyboard's way): a pointer's shortcut to the same filter.
                  onClick={href ? () => route(href) : undefined}
                >
                  {title ? <title>{title}</title> : null}
                </path>
              </g>
            );
          })}
        </svg>
      )}
      <figcaption>
        {placed === 0 ? (
          t('stats.map_empty')
        ) : (
          <>
            <ul class="map-legend" aria-label={t('stats.map_legend')}>
              {legendOf(max).map((step) => (
                <li key={step.opacity}>
                  <span class="map-swatch" style={{ opacity: step.opacity }} aria-hidden="true" />
                  {t('stats.map_from', { visits: formatNumber(locale, step.from) })}
                </li>
              ))}
            </ul>
            <p class="map-caption">{visits.size === 1 ? t('stats.map_caption_one') : t('stats.map_caption', { count: formatNumber(locale, visits.size) })}</p>
          </>
        )}
      </figcaption>
    </figure>
  );
}
