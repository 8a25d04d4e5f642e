// The statistics page's world map (issue 41): human visits by country on an SVG map drawn in the
// browser from Natural Earth's 1:110m countries (world-atlas, TopoJSON, about 105 KB, loaded with the
// map's own chunk the first time a report has countries), projected with d3-geo's Equal Earth. No
// tile server and no request beyond the dashboard's own origin: it works offline and under the
// dashboard's Content-Security-Policy. The map is a picture for the eye (aria-hidden): the countries
// table beside it is its accessible alternative, and says the same numbers. A country with visits
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
      code: (country.id !== undefined && countries.numericToAlpha2(String(country.id))) || '',
      d: path(country) ?? '',
    }));
  })();
  shapes.catch(() => (shapes = undefined));
  return shapes;
}

/** The step of a count on a logarithmic scale up to `max` (visits spread over orders of magnitude). */
const stepOf = (visits: number, max: number) =>
  max <= 1 ? STEPS.length - 1 : Math.min(STEPS.length - 1, Math.floor((Math.log(visits) / Math.log(max)) * (STEPS.length - 1) + 1e-9));

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
        <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} aria-hidden="true" focusable="false">
          {state.shapes.map((shape, index) => {
            const count = visits.get(shape.code) ?? 0;
            const href = count > 0 ? hrefOf(shape.code) : undefined;
            const label = shape.code ? `${countryName(shape.code)}: ${formatNumber(locale, count)}` : '';
            return (
              <path
                key={index}
                d={shape.d}
                data-country={shape.code || undefined}
                data-visits={count || undefined}
                class={count > 0 ? (href ? 'country country-visited country-link' : 'country country-visited') : 'country'}
                style={count > 0 ? { fillOpacity: STEPS[stepOf(count, max)] } : undefined}
                // Not focusable (the table is the keyboard's way, and the SVG is hidden from assistive technology): a pointer's shortcut to the same filter.
                onClick={href ? () => route(href) : undefined}
              >
                {label ? <title>{label}</title> : null}
              </path>
            );
          })}
        </svg>
      )}
      <figcaption>
        {placed === 0 ? (
          t('stats.map_empty')
        ) : (
          <>
            <span class="map-legend" aria-hidden="true">
              <span>1</span>
              {STEPS.map((opacity) => (
                <span key={opacity} class="map-swatch" style={{ opacity }} />
              ))}
              <span>{formatNumber(locale, max)}</span>
            </span>{' '}
            {t('stats.map_caption', { count: formatNumber(locale, visits.size) })}
          </>
        )}
      </figcaption>
    </figure>
  );
}
