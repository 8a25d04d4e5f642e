import type { RedirectRule, Variant } from '../links/rules.js';
import type { ColumnType, Generated } from 'kysely';

/** Row types of the relational store, one interface per table (plural snake_case names). */
export interface UsersTable {
  id: string;
  email: string;
  password_hash: string;
  role: 'staff' | 'user';
  display_name: string | null;
  /** The language the account last signed in with (its e-mails are written in it); null before a first sign-in. */
  locale: ColumnType<'en' | 'de' | 'fr' | 'es' | null, 'en' | 'de' | 'fr' | 'es' | null | undefined, 'en' | 'de' | 'fr' | 'es' | null>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  /** Set while staff have disabled the account (its sessions and tokens refused, no sign-in); null when active. */
  disabled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface SchemaMigrationsTable {
  version: string;
  name: string;
  checksum: string;
  applied_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface AuditLogTable {
  id: Generated<string>;
  actor_id: string | null;
  action: string;
  target: string | null;
  ip: string | null;
  details: ColumnType<Record<string, unknown>, string, string>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface SessionsTable {
  id_hash: string;
  /** The public id of a session (lists and revocation name it); never its secret's hash. */
  id: Generated<string>;
  user_id: string;
  ip: string | null;
  user_agent: string | null;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  last_seen_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface PasswordResetsTable {
  token_hash: string;
  user_id: string;
  issued_by: string | null;
  ip: string | null;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface ApiTokensTable {
  id: Generated<string>;
  user_id: string;
  name: string;
  prefix: string;
  token_hash: string;
  scopes: string[];
  ip_allowlist: ColumnType<string[], string[] | undefined, string[]>;
  expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  last_used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  last_used_ip: string | null;
  created_via: 'session' | 'token';
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface SubdomainsTable {
  name: string;
  owner_id: string;
  /** The team whose members reach the subdomain by their role (issue 39); null: its owner's alone. */
  team_id: ColumnType<string | null, string | null | undefined, string | null>;
  title: string | null;
  stats_public: ColumnType<boolean, boolean | undefined, boolean>;
  stats_show_visits_list: ColumnType<boolean, boolean | undefined, boolean>;
  stats_show_ip: ColumnType<boolean, boolean | undefined, boolean>;
  stats_show_internal_ip: ColumnType<boolean, boolean | undefined, boolean>;
  stats_show_geo: ColumnType<boolean, boolean | undefined, boolean>;
  stats_show_ua: ColumnType<boolean, boolean | undefined, boolean>;
  stats_show_referrer: ColumnType<boolean, boolean | undefined, boolean>;
  stats_show_links: ColumnType<boolean, boolean | undefined, boolean>;
  stats_show_owner: ColumnType<boolean, boolean | undefined, boolean>;
  stats_show_attack_paths: ColumnType<boolean, boolean | undefined, boolean>;
  stats_publish_delay_sec: ColumnType<number, number | undefined, number>;
  stats_max_items: ColumnType<number, number | undefined, number>;
  /** Site origins the tracker may run on (canonical, as in an Origin header); empty: any site. */
  tracker_origins: ColumnType<string[], string[] | undefined, string[]>;
  /** The `forward_query` a link created without one takes (migration 0021). */
  forward_query: ColumnType<boolean, boolean | undefined, boolean>;
  /** Days raw visits are kept (null: as long as VISITS_RETENTION_DAYS_MAX allows). */
  visits_retention_days: ColumnType<number | null, number | null | undefined, number | null>;
  /** Live links of the subdomain, kept by triggers (bigint, read as a string). */
  live_links: ColumnType<string, never, never>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** A member's role in a team, widest first. */
export type TeamRole = 'owner' | 'admin' | 'editor' | 'viewer';

export interface TeamsTable {
  id: Generated<string>;
  name: string;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface TeamMembersTable {
  team_id: string;
  user_id: string;
  role: TeamRole;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface TeamInvitationsTable {
  id: Generated<string>;
  team_id: string;
  email: string;
  role: TeamRole;
  /** SHA-256 of the invitation's secret; the secret itself is mailed or shown once. */
  token_hash: string;
  invited_by: string | null;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  accepted_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  accepted_by: string | null;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface LinksTable {
  id: string;
  /** Creation order: sorts lists and keys their cursors (bigint, read as a string). */
  seq: ColumnType<string, never, never>;
  owner_id: string;
  subdomain: string;
  slug: string;
  target_url: string;
  title: string | null;
  tags: ColumnType<string[], string[] | undefined, string[]>;
  expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  max_visits: number | null;
  redirect_type: ColumnType<number, number | undefined, number>;
  /** From links_version_seq (bigint, read as a string). */
  version: ColumnType<string, never, string>;
  client_id: string | null;
  client_body_hash: string | null;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  deleted_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  limit_reached_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  append_visit_id: ColumnType<boolean, boolean | undefined, boolean>;
  /** Issue 40: where an expired or exhausted link redirects instead of its 410. */
  fallback_url: ColumnType<string | null, string | null | undefined, string | null>;
  /** Issue 40: scrypt hash of the password the edge asks first (shared/password.ts); null: none. */
  password_hash: ColumnType<string | null, string | null | undefined, string | null>;
  // Issue 40 (migration 0018): redirect rules, A/B variants, query forwarding (shared/links/rules.ts).
  rules: ColumnType<RedirectRule[] | null, string | null | undefined, string | null>;
  variants: ColumnType<Variant[] | null, string | null | undefined, string | null>;
  forward_query: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface PlatformSecretsTable {
  name: string;
  value: string;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface VisitorSaltsTable {
  /** UTC day, `YYYY-MM-DD`. */
  day: ColumnType<string, string, never>;
  salt: string;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface WebhooksTable {
  id: Generated<string>;
  seq: ColumnType<string, never, never>;
  owner_id: string;
  url: string;
  events: string[];
  subdomain: string | null;
  description: string | null;
  /** Sealed (shared/secrets/secret-box.ts); open it with the context's secret box. */
  secret: string;
  /** The first 12 characters of the plaintext secret, shown to recognise it. */
  secret_prefix: string;
  enabled: ColumnType<boolean, boolean | undefined, boolean>;
  disabled_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  disabled_reason: string | null;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface WebhookDeliveriesTable {
  seq: ColumnType<string, never, never>;
  webhook_id: string;
  delivery_id: string;
  event_id: string;
  event: string;
  attempt: number;
  attempted_at: ColumnType<Date, Date | string, never>;
  status_code: number | null;
  latency_ms: number;
  success: boolean;
  error: string | null;
  response_excerpt: string | null;
}

export interface NotificationsTable {
  id: Generated<string>;
  seq: ColumnType<string, never, never>;
  user_id: string;
  kind: string;
  title: string;
  body: string;
  data: ColumnType<Record<string, unknown>, string | undefined, string>;
  emailed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  read_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

/** TOTP of an account (issue 36): the secret sealed with the secrets key, bound to the user. */
export interface UserTotpTable {
  user_id: string;
  secret: string;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  /** Null while the enrolment waits for its first code. */
  enabled_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** The last time-step a code was accepted for (bigint: read as a string). */
  last_step: ColumnType<string | null, number | null | undefined, number | null>;
}

export interface TotpRecoveryCodesTable {
  user_id: string;
  code_hash: string;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface LoginChallengesTable {
  id_hash: string;
  user_id: string;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface PlatformSettingsTable {
  name: string;
  value: ColumnType<unknown, string, string>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  updated_by: string | null;
}

/** An import of another shortener's export (issue 39): its file, state and progress. */
export interface ImportsTable {
  id: string;
  seq: ColumnType<string, never, never>;
  owner_id: string;
  subdomain: string;
  source: string;
  dry_run: boolean;
  status: 'queued' | 'running' | 'completed' | 'failed';
  error: ColumnType<{ code: string; details: Record<string, unknown> } | null, never, string | null>;
  file: string | null;
  file_bytes: number;
  rows_total: number | null;
  rows_read: ColumnType<number, number | undefined, number>;
  counts: ColumnType<Record<string, number>, string, string>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  started_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  finished_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** One row of an import's report, by its line in the file. */
export interface ImportRowsTable {
  import_id: string;
  line: number;
  status: string;
  slug: string | null;
  reason: string | null;
  link_id: string | null;
}

/** A domain of an owner's own attached to one of their subdomains (issue 40), served once its TXT record is verified. */
export interface CustomDomainsTable {
  domain: string;
  subdomain: string;
  token: string;
  status: ColumnType<CustomDomainStatus, CustomDomainStatus | undefined, CustomDomainStatus>;
  verified_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  failing_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  checked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  check_error: ColumnType<string | null, string | null | undefined, string | null>;
  created_by: string | null;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** pending: never verified; verified: served; failing: served, its record missing (until the grace period ends); lapsed: no longer served. */
export type CustomDomainStatus = 'pending' | 'verified' | 'failing' | 'lapsed';

/** A subdomain's QR-code logo (issue 40), normalised to a PNG. */
export interface SubdomainQrLogosTable {
  subdomain: string;
  png: Uint8Array;
  width: number;
  height: number;
  digest: string;
  updated_by: string | null;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface DB {
  subdomain_qr_logos: SubdomainQrLogosTable;
  custom_domains: CustomDomainsTable;
  imports: ImportsTable;
  import_rows: ImportRowsTable;
  user_totp: UserTotpTable;
  totp_recovery_codes: TotpRecoveryCodesTable;
  login_challenges: LoginChallengesTable;
  platform_settings: PlatformSettingsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  notifications: NotificationsTable;
  platform_secrets: PlatformSecretsTable;
  visitor_salts: VisitorSaltsTable;
  subdomains: SubdomainsTable;
  links: LinksTable;
  users: UsersTable;
  sessions: SessionsTable;
  password_resets: PasswordResetsTable;
  api_tokens: ApiTokensTable;
  schema_migrations: SchemaMigrationsTable;
  audit_log: AuditLogTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  team_invitations: TeamInvitationsTable;
}
