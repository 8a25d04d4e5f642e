import { z } from 'zod';
/** An account as the API shows it: never the password hash. */
export interface UserView {
  id: string;
  email: string;
  role: 'staff' | 'user';
  display_name: string | null;
  created_at: string;
  disabled: boolean;
  disabled_at: string | null;
}

/** The API's view of a users row. */
export function toUserView(user: {
  id: string;
  email: string;
  role: 'staff' | 'user';
  display_name: string | null;
  created_at: Date;
  disabled_at: Date | null;
}): UserView {
  return {
    id: user.id,
    email: user.email,
    role: user.role,
    display_name: user.display_name,
    created_at: user.created_at.toISOString(),
    disabled: user.disabled_at !== null,
    disabled_at: user.disabled_at?.toISOString() ?? null,
  };
}

/** What an account's deletion answers: its id and how much went with it (staff's DELETE /api/v1/users/{id} and DELETE /api/v1/me). */
export const DeletedUserSchema = z
  .object({
    id: z.uuid(),
    deleted: z.object({
      links: z.number().int().min(0).meta({ description: 'Links, live or soft-deleted.' }),
      subdomains: z.number().int().min(0),
      webhooks: z.number().int().min(0),
      tokens: z.number().int().min(0),
      sessions: z.number().int().min(0),
      teams: z.number().int().min(0).meta({ description: 'Teams the account was the only member of, deleted with it.' }),
      visits: z.number().int().min(0).meta({ description: 'Raw visit rows (every stored version counts).' }),
      dead_letters: z.number().int().min(0).meta({ description: 'Dead letters (`visits.dlq`) that named the account, removed.' }),
    }),
  })
  .meta({ id: 'DeletedUser' });
