// `seedVisitsInChild`'s process: opens the chDB of the configuration given (JSON, argv[2]), seeds the
// plan (JSON, argv[3]) and closes it.
import { createAnalytics } from '#shared/analytics/analytics.js';
import { seedVisits } from './seed-visits.js';

const analytics = createAnalytics(JSON.parse(process.argv[2]!));
try {
  await seedVisits({ analytics }, JSON.parse(process.argv[3]!));
} finally {
  await analytics.close();
}
