/** The API's view of a users row. */
export function toUserView(user) {
    return { id: user.id, email: user.email, role: user.role, display_name: user.display_name, created_at: user.created_at.toISOString() };
}
//# sourceMappingURL=users.view.js.map