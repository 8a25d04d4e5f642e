/** Slugs: lower-case letters, digits, `_` and `-`, starting with a letter or digit, 1 to 64 characters. */
export const SLUG = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** Paths the short hosts serve themselves. */
export const RESERVED_SLUGS = ['api', 'auth', 'tracker', 'metrics', 'health', 'static', 'assets', 'qr', 'robots', 'favicon'] as const;
