/** SQL for subdomains and their policies: the only place that queries the subdomains table. */
export function subdomainsRepository(db) {
    return {
        /** Claims a name; undefined when it is taken. */
        async insertIfFree(name, ownerId, title) {
            return db
                .insertInto('subdomains')
                .values({ name, owner_id: ownerId, title })
                .onConflict((oc) => oc.column('name').doNothing())
                .returningAll()
                .executeTakeFirst();
        },
        async find(name) {
            return db.selectFrom('subdomains').selectAll().where('name', '=', name).executeTakeFirst();
        },
        /** A subdomain with its owner's display name (the public page names the owner by it). */
        async findWithOwner(name) {
            return db
                .selectFrom('subdomains')
                .innerJoin('users', 'users.id', 'subdomains.owner_id')
                .selectAll('subdomains')
                .select('users.display_name as owner_display_name')
                .where('subdomains.name', '=', name)
                .executeTakeFirst();
        },
        async listByOwner(ownerId) {
            return db.selectFrom('subdomains').selectAll().where('owner_id', '=', ownerId).orderBy('name').execute();
        },
        async countByOwner(ownerId) {
            const row = await db
                .selectFrom('subdomains')
                .select((eb) => eb.fn.countAll().as('n'))
                .where('owner_id', '=', ownerId)
                .executeTakeFirstOrThrow();
            return Number(row.n);
        },
        async update(name, changes) {
            return db
                .updateTable('subdomains')
                .set({ ...changes, updated_at: new Date() })
                .where('name', '=', name)
                .returningAll()
                .executeTakeFirst();
        },
    };
}
//# sourceMappingURL=subdomains.repository.js.map