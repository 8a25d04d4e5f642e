// Time-zone names as people know them today. Browsers list zones by ICU's canonical IDs, which
// keep names IANA has since renamed (Asia/Calcutta for Asia/Kolkata, Europe/Kiev for Europe/Kyiv),
// and resolve the new names back to the old ones: the dashboard offers the current names and finds
// a zone by either.

/** ICU's old IDs and their current IANA names (tzdata's `backward` renames that ICU still lists). */
const RENAMED: Readonly<Record<string, string>> = {
  'Africa/Asmera': 'Africa/Asmara',
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Coral_Harbour': 'America/Atikokan',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei',
  'Pacific/Truk': 'Pacific/Chuuk',
};

/** The old names of each current one. */
const FORMER = new Map(Object.entries(RENAMED).map(([old, current]) => [current, old]));

/** A zone's current IANA name (Asia/Calcutta → Asia/Kolkata; current names are kept). */
export function currentZoneName(name: string): string {
  return RENAMED[name] ?? name;
}

/** The name a zone had before IANA renamed it, if any (Asia/Kolkata → Asia/Calcutta). */
export function formerZoneName(name: string): string | undefined {
  return FORMER.get(name);
}

/** Every zone this browser knows, by current name, with UTC and `current`, sorted. */
export function zoneNames(current: string): string[] {
  const listed = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return [...new Set(['UTC', current, ...listed.map(currentZoneName)])].sort();
}

/** Whether a zone matches a search by its current or former name, spaces standing for underscores ("kolkata", "calcutta", "new york"). */
export function zoneMatches(name: string, search: string): boolean {
  const needle = search.trim().toLowerCase().replaceAll(' ', '_');
  if (needle === '') return true;
  return [name, formerZoneName(name) ?? ''].some((candidate) => candidate.toLowerCase().includes(needle));
}
