// A member of a Kafka consumer group for the message log's recovery test
// (shared/message-log/message-log.int.test.ts), killed with SIGKILL by the test mid-batch:
//   KAFKA_BROKERS=… node --import tsx tests/support/kafka-member-child.ts <topic prefix> <group>
// consumes visits.raw of the prefix in the group, prints "batch <messages>" when handed its first
// batch, and never finishes it (nothing is committed).
import { createLogger } from '#shared/logger.js';
import { createMetrics } from '#shared/metrics.js';
import { createKafkaLog } from '#shared/message-log/kafka.js';
import { TOPICS } from '#shared/message-log/topics.js';

const [topicPrefix, groupId] = process.argv.slice(2);
const brokers = (process.env.KAFKA_BROKERS ?? '').split(',').filter(Boolean);
if (!topicPrefix || !groupId || brokers.length === 0) throw new Error('usage: KAFKA_BROKERS=… kafka-member-child.ts <topic prefix> <group>');
const log = createKafkaLog({ brokers, clientId: 'kafka-member-child', topicPrefix }, createLogger({ logLevel: 'silent' }), createMetrics());
await log.consume({
  groupId,
  topic: TOPICS.visitsRaw,
  handler: async (messages) => {
    process.stdout.write(`batch ${messages.length}\n`);
    await new Promise(() => undefined);
  },
});
process.stdout.write('joined\n');
