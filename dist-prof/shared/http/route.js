/** Name of the session cookie set by POST /auth/login. */
export const SESSION_COOKIE = 'lt_session';
/** Token scopes of the spec. */
export const SCOPES = ['links:read', 'links:write', 'stats:read', 'subdomain:write', 'team:read', 'admin'];
/** Scopes a session grants: every scope for staff, all but `admin` for users. */
export function sessionScopes(role) {
    return role === 'staff' ? [...SCOPES] : SCOPES.filter((scope) => scope !== 'admin');
}
/** Declares a route with full type inference of its handler. */
export function defineRoute(def) {
    return def;
}
/** The `{param}` path in Fastify's `:param` form. */
export function fastifyPath(path) {
    return path.replace(/\{(\w+)\}/g, ':$1');
}
/** Error codes an operation can answer: derived from its declaration plus its own list. */
export function routeErrorCodes(route) {
    const codes = new Set(['bad_request', 'internal_error', 'encode_error', 'service_unavailable']);
    // Every operation takes `?lang=`, so every one can answer validation_error.
    codes.add('validation_error');
    if (route.params || route.query || route.body)
        codes.add('missing_parameter');
    if (route.body)
        codes.add('payload_too_large');
    if (route.bucket)
        codes.add('rate_limited');
    if (route.auth.kind !== 'none') {
        for (const code of ['invalid_token', 'forbidden'])
            codes.add(code);
        if (route.auth.kind !== 'optional')
            codes.add('unauthorized');
    }
    for (const code of route.errors ?? [])
        codes.add(code);
    return [...codes];
}
//# sourceMappingURL=route.js.map