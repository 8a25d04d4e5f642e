import type { CheckpointGroup } from '#shared/backup/backup.js';
import { TOPICS } from '#shared/message-log/topics.js';
import { BEACON_GROUP } from './beacon-consumer.js';
import { ENRICHER_GROUP } from './visit-consumer.js';

/** The enricher's consumer groups, whose topics fill the analytics store: a backup's checkpoint waits for them. */
export const ENRICHER_CHECKPOINT_GROUPS: CheckpointGroup[] = [
  { topic: TOPICS.visitsRaw, group: ENRICHER_GROUP },
  { topic: TOPICS.trackerRaw, group: BEACON_GROUP },
];
