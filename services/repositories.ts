import { beaconsRepository } from '#shared/analytics/beacons.repository.js';
import { exportsRepository } from '#shared/analytics/exports.repository.js';
import { analyticsBackupRepository } from '#shared/backup/backup.repository.js';
import { statsRepository } from '#shared/analytics/stats.repository.js';
import { visitsRepository } from '#shared/analytics/visits.repository.js';
import { auditRepository } from '#shared/audit/audit.repository.js';
import { domainsRepository } from '#shared/domains/domains.repository.js';
import type { Context, ProcessContext, ThinContext } from '#shared/context.js';
import { importsRepository } from '#shared/imports/imports.repository.js';
import { linksRepository } from '#shared/links/links.repository.js';
import { platformSecretsRepository } from '#shared/secrets/platform-secrets.repository.js';
import { subdomainsRepository } from '#shared/subdomains/subdomains.repository.js';
import { teamsRepository } from '#shared/teams/teams.repository.js';
import { usersRepository } from '#shared/users/users.repository.js';
import { webhooksRepository } from '#shared/webhooks/webhooks.repository.js';
import { passwordResetsRepository } from './api/auth/password-resets.repository.js';
import { sessionsRepository } from './api/auth/sessions.repository.js';
import { totpRepository } from './api/auth/totp.repository.js';
import { settingsRepository } from './api/settings/settings.repository.js';
import { tokensRepository } from './api/tokens/tokens.repository.js';
import { visitorSaltsRepository } from './enricher/visitor-salts.repository.js';

/**
 * Every repository of the platform, by what it stores: Postgres (users to visitor salts) and
 * ClickHouse (visits to exports). Built once per process from the clients, in the composition roots
 * (services/platform.ts, and services/app.ts and the enricher's and worker's start functions when
 * they run alone, as tests and benches run them); each service, route module and role function
 * takes only the ones it uses (`Pick<Repositories, 'links' | 'audit'>`), so its signature says what
 * it reads and writes. This module lives in services/ because some repositories belong to one role
 * (sessions and tokens to the API, visitor salts to the enricher) and shared/ imports no service code.
 */
export type Repositories = ReturnType<typeof createRepositories>;

/** The Postgres repositories alone: all a process without the analytics store (an ingest node, a worker) has. */
export type PostgresRepositories = ReturnType<typeof postgresRepositories>;

/**
 * Each repository once, over the process's Postgres and ClickHouse clients. Repositories hold no
 * state of their own (each is its queries over a client), so building them opens nothing and there
 * is nothing to close: the clients are closed with the context.
 */
export function createRepositories({ db, analytics }: Pick<Context, 'db' | 'analytics'>) {
  return {
    ...postgresRepositories({ db }),
    visits: visitsRepository(analytics),
    beacons: beaconsRepository(analytics),
    stats: statsRepository(analytics),
    exports: exportsRepository(analytics),
    backups: analyticsBackupRepository(analytics),
  };
}

/** Each Postgres repository once, over the process's Postgres client. */
export function postgresRepositories({ db }: Pick<Context, 'db'>) {
  const postgres = db.db;
  return {
    users: usersRepository(postgres),
    sessions: sessionsRepository(postgres),
    passwordResets: passwordResetsRepository(postgres),
    totp: totpRepository(postgres),
    settings: settingsRepository(postgres),
    tokens: tokensRepository(postgres),
    links: linksRepository(postgres),
    imports: importsRepository(postgres),
    subdomains: subdomainsRepository(postgres),
    teams: teamsRepository(postgres),
    domains: domainsRepository(postgres),
    webhooks: webhooksRepository(postgres),
    audit: auditRepository(postgres),
    platformSecrets: platformSecretsRepository(postgres),
    visitorSalts: visitorSaltsRepository(postgres),
  };
}

/**
 * Runs `work` in one Postgres transaction, with each Postgres repository built over that
 * transaction: its writes commit together, or none does when `work` throws (the bulk link upload's
 * `all_or_none`). Built here, the composition root, so that services never reach the Postgres handle.
 */
export function inPostgresTransaction<T>({ db }: Pick<Context, 'db'>, work: (repositories: PostgresRepositories) => Promise<T>): Promise<T> {
  return db.db.transaction().execute((trx) => work(postgresRepositories({ db: { ...db, db: trx } })));
}

/** A process's context with its repositories, tagged by whether it has the analytics store (`full`) or not (`thin`). */
export type Composition =
  { kind: 'full'; context: Context; repositories: Repositories } | { kind: 'thin'; context: ThinContext; repositories: PostgresRepositories };

/**
 * Pairs a process's context with its repositories: the set given (services/platform.ts hands its one
 * set) when it fits the context, else one built from the context's clients (every repository with the
 * analytics store, the Postgres ones without).
 */
export function composition(context: ProcessContext, given?: Repositories | PostgresRepositories): Composition {
  if (!context.analytics) return { kind: 'thin', context, repositories: given ?? postgresRepositories(context) };
  return { kind: 'full', context, repositories: given && 'visits' in given ? given : createRepositories(context) };
}
