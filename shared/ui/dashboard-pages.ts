/**
 * The dashboard's pages: the first path segment of each. The API role answers `GET` of these
 * paths (and their sub-paths) with the dashboard's HTML, and the dashboard's router knows no others,
 * so an unknown path is the platform's 404 whether typed or followed.
 */
export const DASHBOARD_PAGES = [
  'login',
  'subdomains',
  'links',
  'stats',
  'visits',
  'attacks',
  'exports',
  'imports',
  'teams',
  'invitations',
  'tokens',
  'webhooks',
  'notifications',
  'staff',
  'account',
] as const;

export type DashboardPage = (typeof DASHBOARD_PAGES)[number];
