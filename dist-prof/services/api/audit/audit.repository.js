/** SQL for the audit log: the only place that writes audit_log. */
export function auditRepository(db) {
    return {
        async insert(entry) {
            await db
                .insertInto('audit_log')
                .values({
                actor_id: entry.actorId ?? null,
                action: entry.action,
                target: entry.target ?? null,
                ip: entry.ip ?? null,
                details: JSON.stringify(entry.details ?? {}),
            })
                .execute();
        },
        async list(filter) {
            let query = db.selectFrom('audit_log').selectAll().orderBy('created_at', 'desc').limit(filter.limit ?? 100);
            if (filter.action)
                query = query.where('action', '=', filter.action);
            if (filter.actorId)
                query = query.where('actor_id', '=', filter.actorId);
            return query.execute();
        },
    };
}
//# sourceMappingURL=audit.repository.js.map