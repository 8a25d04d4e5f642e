// The statistics' time-zone picker: zones by their current names (Asia/Kolkata, Europe/Kyiv, not
// the old IDs the browser lists), each also found by its former name, through a filter beside the
// list (a select's own type-ahead only matches the start of a label, so "Kolkata" found nothing).
import { useMemo, useState } from 'preact/hooks';
import { useI18n } from '../app/i18n.js';
import { formerZoneName, zoneMatches, zoneNames } from '../app/time-zones.js';

const zoneLabel = (zone: string) => {
  const former = formerZoneName(zone);
  return `${zone.replaceAll('_', ' ')}${former ? ` (${former.replaceAll('_', ' ')})` : ''}`;
};

export function TimeZonePicker({ value, onChange }: { value: string; onChange: (zone: string) => void }) {
  const { t } = useI18n();
  const [search, setSearch] = useState('');
  const zones = useMemo(() => zoneNames(value), [value]);
  // The chosen zone stays listed whatever the filter, so the select always shows what is in use.
  const shown = zones.filter((zone) => zone === value || zoneMatches(zone, search));
  return (
    <div class="picker picker-zone">
      <label class="picker-label" for="stats-tz">
        {t('stats.timezone')}
      </label>
      <input
        type="search"
        id="stats-tz-search"
        class="zone-search"
        aria-label={t('stats.timezone_search')}
        placeholder={t('stats.timezone_search')}
        aria-controls="stats-tz"
        value={search}
        onInput={(event) => setSearch(event.currentTarget.value)}
      />
      <select id="stats-tz" value={value} onChange={(event) => onChange(event.currentTarget.value)}>
        {shown.map((zone) => (
          <option key={zone} value={zone}>
            {zoneLabel(zone)}
          </option>
        ))}
      </select>
    </div>
  );
}
