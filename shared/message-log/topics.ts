/** Every topic of the message log, in one place. Kafka names get KAFKA_TOPIC_PREFIX in front. */
export const TOPICS = {
  visitsRaw: 'visits.raw',
  trackerRaw: 'tracker.raw',
  visitsDlq: 'visits.dlq',
  /** Platform events (`link.created`, `visit.new`, …) for the webhook worker, keyed by owner id. */
  events: 'events',
} as const;

export type Topic = (typeof TOPICS)[keyof typeof TOPICS];
export const TOPIC_NAMES = Object.values(TOPICS) as Topic[];

/** The enricher's consumer groups: what they commit is stored in the analytics store (an erasure waits for them). */
export const ENRICHER_GROUPS = { [TOPICS.visitsRaw]: 'enricher', [TOPICS.trackerRaw]: 'enricher-beacons' } as const;
