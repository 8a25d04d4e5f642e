import type { CheckpointGroup } from '#shared/backup/backup.js';
import { ENRICHER_GROUPS, TOPICS } from '#shared/message-log/topics.js';

/** The enricher's consumer groups, whose topics fill the analytics store: a backup's checkpoint waits for them. */
export const ENRICHER_CHECKPOINT_GROUPS: CheckpointGroup[] = [TOPICS.visitsRaw, TOPICS.trackerRaw].map((topic) => ({ topic, group: ENRICHER_GROUPS[topic] }));
