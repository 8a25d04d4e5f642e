import { sql } from 'kysely';
/** SQL for users: the only place that queries the users table. */
export function usersRepository(db) {
    return {
        async count() {
            const row = await db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
            return Number(row.n);
        },
        /** Inserts the user unless the e-mail (case-insensitive) exists; returns the id, or undefined if it existed. */
        async insertIfAbsent(user) {
            const row = await db
                .insertInto('users')
                .values({
                id: crypto.randomUUID(),
                email: user.email,
                password_hash: user.passwordHash,
                role: user.role,
                display_name: user.displayName ?? null,
            })
                .onConflict((conflict) => conflict.expression(sql `lower(email)`).doNothing())
                .returning('id')
                .executeTakeFirst();
            return row?.id;
        },
        async findById(id) {
            return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
        },
        async findByEmail(email) {
            return db
                .selectFrom('users')
                .selectAll()
                .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
                .executeTakeFirst();
        },
    };
}
//# sourceMappingURL=users.repository.js.map