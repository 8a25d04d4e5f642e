import type { ColumnType, Generated } from 'kysely';

/** Row types of the relational store, one interface per table (plural snake_case names). */
export interface UsersTable {
  id: string;
  email: string;
  password_hash: string;
  role: 'staff' | 'user';
  display_name: string | null;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
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
  user_id: string;
  ip: string | null;
  user_agent: string | null;
  created_at: ColumnType<Date, Date | string | undefined, never>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
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

export interface DB {
  users: UsersTable;
  sessions: SessionsTable;
  api_tokens: ApiTokensTable;
  schema_migrations: SchemaMigrationsTable;
  audit_log: AuditLogTable;
}
