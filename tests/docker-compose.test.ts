import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONFIG_VARS, PRODUCTION_VARS, ROLES } from '#shared/config.js';
import { PROJECT_ROOT } from '#shared/paths.js';

const compose = parse(readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { environment?: Record<string, unknown>; command?: string[] }>;
};

describe('docker-compose.yml', () => {
  it('parses and has the production topology', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'clickhouse', 'enricher', 'ingest', 'kafka', 'postgres', 'redis', 'worker']);
  });

  it.each(ROLES)('the %s service sets every variable the production topology requires, and runs only its role', (role) => {
    const service = compose.services[role]!;
    const environment = service.environment ?? {};
    for (const name of PRODUCTION_VARS) expect(environment, `${role} sets ${name}`).toHaveProperty(name);
    expect(environment.SERVICE_ROLES).toBe(role);
    expect(service.command).toEqual(['node', `dist/services/${role}/main.js`]);
  });

  it('names only variables the config schema knows', () => {
    for (const role of ROLES) {
      for (const name of Object.keys(compose.services[role]!.environment ?? {})) {
        expect(Object.keys(CONFIG_VARS), `${role}: ${name}`).toContain(name);
      }
    }
  });
});
