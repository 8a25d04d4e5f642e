// What a load test run does, from the environment (docs/operations.md, "Load test", lists the variables).

export interface Settings {
  /** A platform already running (loopback only); without it the run starts one. */
  baseUrl: string | undefined;
  /** Short hosts are `{subdomain}.{baseDomain}` (sent as the Host header: no DNS needed). */
  baseDomain: string;
  /** The staff account that creates the owners on a BASE_URL platform (the run makes its own otherwise). */
  admin: { email: string; password: string } | undefined;
  /** Seconds of each scenario's load. */
  seconds: number;
  /** Connections of the redirect loads (the beacons use 20, the export one at a time). */
  connections: number;
  /** Connections of the API mix: clients reading at once, each as fast as it is answered. */
  apiConnections: number;
  /** Requests per second each load sends at most (0: as fast as answered). */
  rate: number;
  owners: number;
  linksPerSubdomain: number;
  /** How long the visits answered may take to be stored, counted from the end of the last load. */
  drainSeconds: number;
  /** Share of a scenario's requests that may fail (no answer, or an answer a check refuses). */
  maxErrorRate: number;
  /** Multiplies every p99 bound (a slower machine or target). */
  p99Factor: number;
}

/** A number from the environment, with its default and its range; anything else stops the run with one line. */
function numberOf(name: string, fallback: number, { min, max, integer = true }: { min: number; max: number; integer?: boolean }): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < min || value > max) {
    throw new Error(`${name}=${raw}: must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
  }
  return value;
}

/** True for an address of this machine: the load test sends nothing elsewhere. */
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): Settings {
  const baseUrl = env.BASE_URL?.trim() ? env.BASE_URL.trim().replace(/\/+$/, '') : undefined;
  if (baseUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      throw new Error(`BASE_URL=${baseUrl}: not a URL`);
    }
    if (url.protocol !== 'http:') throw new Error(`BASE_URL=${baseUrl}: must be http:// (a platform on this machine)`);
    if (!isLoopback(url.hostname)) throw new Error(`BASE_URL=${baseUrl}: the load test runs on loopback only (127.0.0.1, ::1 or localhost)`);
    if (!env.ADMIN_EMAIL || !env.ADMIN_PASSWORD)
      throw new Error('with BASE_URL, ADMIN_EMAIL and ADMIN_PASSWORD name a staff account of that platform (it creates the owners)');
  }
  return {
    baseUrl,
    baseDomain: env.BASE_DOMAIN?.trim() || 'localhost',
    admin: baseUrl ? { email: env.ADMIN_EMAIL!, password: env.ADMIN_PASSWORD! } : undefined,
    seconds: numberOf('LOADTEST_SECONDS', 20, { min: 1, max: 3600 }),
    connections: numberOf('LOADTEST_CONNECTIONS', 50, { min: 1, max: 1000 }),
    apiConnections: numberOf('LOADTEST_API_CONNECTIONS', 1, { min: 1, max: 1000 }),
    rate: numberOf('LOADTEST_RATE', 0, { min: 0, max: 10_000_000 }),
    owners: numberOf('LOADTEST_OWNERS', 2, { min: 1, max: 20 }),
    linksPerSubdomain: numberOf('LOADTEST_LINKS', 5, { min: 1, max: 1000 }),
    drainSeconds: numberOf('LOADTEST_DRAIN_SECONDS', 120, { min: 1, max: 3600 }),
    maxErrorRate: numberOf('LOADTEST_MAX_ERROR_RATE', 0.001, { min: 0, max: 1, integer: false }),
    p99Factor: numberOf('LOADTEST_P99_FACTOR', 1, { min: 0.01, max: 1000, integer: false }),
  };
}
