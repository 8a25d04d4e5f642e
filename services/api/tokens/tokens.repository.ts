import type { Kysely, Selectable } from 'kysely';
import type { ApiTokensTable, DB } from '#shared/db/schema.js';

export type TokenRow = Selectable<ApiTokensTable>;

/** A token with what authentication needs of its user (`disabled_at` set: the account is disabled). */
export type TokenWithUser = TokenRow & { email: string; role: 'staff' | 'user'; disabled_at: Date | null };

export interface NewToken {
  userId: string;
  name: string;
  prefix: string;
  tokenHash: string;
  scopes: string[];
  ipAllowlist: string[];
  expiresAt: Date | null;
  createdVia: 'session' | 'token';
}

/** SQL for API tokens: the only place that queries api_tokens. */
export function tokensRepository(db: Kysely<DB>) {
  return {
    async insert(token: NewToken): Promise<TokenRow> {
      return db
        .insertInto('api_tokens')
        .values({
          user_id: token.userId,
          name: token.name,
          prefix: token.prefix,
          token_hash: token.tokenHash,
          scopes: token.scopes,
          ip_allowlist: token.ipAllowlist,
          expires_at: token.expiresAt,
          created_via: token.createdVia,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    },
    async findByHashWithUser(tokenHash: string): Promise<TokenWithUser | undefined> {
      return db
        .selectFrom('api_tokens')
        .innerJoin('users', 'users.id', 'api_tokens.user_id')
        .selectAll('api_tokens')
        .select(['users.email', 'users.role', 'users.disabled_at'])
        .where('api_tokens.token_hash', '=', tokenHash)
        .executeTakeFirst();
    },
    async findById(id: string): Promise<TokenRow | undefined> {
      return db.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async listByUser(userId: string): Promise<TokenRow[]> {
      return db.selectFrom('api_tokens').selectAll().where('user_id', '=', userId).orderBy('created_at', 'desc').orderBy('id').execute();
    },
    async countActive(userId: string): Promise<number> {
      const row = await db
        .selectFrom('api_tokens')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date())]))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    /** Revokes once: a revoked token keeps its first revocation time. */
    async revoke(id: string): Promise<TokenRow | undefined> {
      await db.updateTable('api_tokens').set({ revoked_at: new Date() }).where('id', '=', id).where('revoked_at', 'is', null).execute();
      return db.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async recordUse(id: string, at: Date, ip: string): Promise<void> {
      await db.updateTable('api_tokens').set({ last_used_at: at, last_used_ip: ip }).where('id', '=', id).execute();
    },
  };
}
