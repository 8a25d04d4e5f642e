import type { TeamRole } from '#shared/db/schema.js';

/** Roles, widest first: each role may do everything the ones after it may. */
export const TEAM_ROLES = ['owner', 'admin', 'editor', 'viewer'] as const satisfies readonly TeamRole[];

/** Whether `role` is at least as wide as `required`. */
export function roleAtLeast(role: TeamRole, required: TeamRole): boolean {
  return TEAM_ROLES.indexOf(role) <= TEAM_ROLES.indexOf(required);
}
