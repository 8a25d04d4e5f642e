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

export interface DB {
  users: UsersTable;
  schema_migrations: SchemaMigrationsTable;
  audit_log: AuditLogTable;
}
