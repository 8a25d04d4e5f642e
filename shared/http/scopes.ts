import { RESERVED_SCOPES } from '../reserved.js';

/** Token scopes of the spec, in its order (`team:read` lists the caller's teams, their members and invitations). */
export const SCOPES = ['links:read', 'links:write', 'stats:read', 'subdomain:write', 'team:read', ...RESERVED_SCOPES, 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** Scopes a session grants: every scope for staff, all but `admin` for users. */
export function sessionScopes(role: 'staff' | 'user'): Scope[] {
  return role === 'staff' ? [...SCOPES] : SCOPES.filter((scope) => scope !== 'admin');
}
