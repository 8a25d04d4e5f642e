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
