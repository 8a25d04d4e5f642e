/** SQL for API tokens: the only place that queries api_tokens. */
export function tokensRepository(db) {
    return {
        async insert(token) {
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
        async findByHashWithUser(tokenHash) {
            return db
                .selectFrom('api_tokens')
                .innerJoin('users', 'users.id', 'api_tokens.user_id')
                .selectAll('api_tokens')
                .select(['users.email', 'users.role'])
                .where('api_tokens.token_hash', '=', tokenHash)
                .executeTakeFirst();
        },
        async findById(id) {
            return db.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirst();
        },
        async listByUser(userId) {
            return db.selectFrom('api_tokens').selectAll().where('user_id', '=', userId).orderBy('created_at', 'desc').orderBy('id').execute();
        },
        async countActive(userId) {
            const row = await db
                .selectFrom('api_tokens')
                .select((eb) => eb.fn.countAll().as('n'))
                .where('user_id', '=', userId)
                .where('revoked_at', 'is', null)
                .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date())]))
                .executeTakeFirstOrThrow();
            return Number(row.n);
        },
        /** Revokes once: a revoked token keeps its first revocation time. */
        async revoke(id) {
            await db.updateTable('api_tokens').set({ revoked_at: new Date() }).where('id', '=', id).where('revoked_at', 'is', null).execute();
            return db.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirst();
        },
        async recordUse(id, at, ip) {
            await db.updateTable('api_tokens').set({ last_used_at: at, last_used_ip: ip }).where('id', '=', id).execute();
        },
    };
}
//# sourceMappingURL=tokens.repository.js.map