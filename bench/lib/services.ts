// The services a benchmark of the production path runs on: those of the environment, or those
// scripts/services-up.sh starts (and the run stops), and what scripts/services-up.sh leaves under
// SERVICES_DIR: the broker's pid and Kafka's own topic tool.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TOPIC_NAMES } from '#shared/message-log/topics.js';
import { PROJECT_ROOT } from '#shared/paths.js';

export interface Services {
  env: Record<string, string>;
  dir: string;
  /** The services scripts/services-up.sh started for this run (stopped at its end). */
  started: string[];
}

/** The environment's services, or those scripts/services-up.sh starts (and says it started). */
export function services(): Services {
  const dir = process.env.SERVICES_DIR || join(PROJECT_ROOT, '.services');
  const { DATABASE_URL, REDIS_URL, KAFKA_BROKERS, SECRETS_KEY } = process.env;
  if (DATABASE_URL && REDIS_URL && KAFKA_BROKERS) return { env: { DATABASE_URL, REDIS_URL, KAFKA_BROKERS, SECRETS_KEY: SECRETS_KEY ?? '' }, dir, started: [] };
  console.log('services: not in the environment; scripts/services-up.sh starts what is not running');
  const up = spawnSync('bash', [join(PROJECT_ROOT, 'scripts/services-up.sh')], { encoding: 'utf8', timeout: 600_000, stdio: ['ignore', 'pipe', 'pipe'] });
  if (up.status !== 0) throw new Error(`scripts/services-up.sh failed (${up.status ?? up.signal}):\n${up.stderr.slice(-3_000)}`);
  const env: Record<string, string> = {};
  for (const [, name, value] of up.stdout.matchAll(/^export (\w+)=(.*)$/gm)) env[name!] = value!;
  const started = [...up.stderr.matchAll(/^services: (postgres|redis|kafka): starting on/gm)].map((match) => match[1]!);
  return { env, dir, started };
}

/** Stops the services this run started (those that ran before it are left running). */
export function servicesDown(started: string[]): void {
  if (started.length === 0) return;
  const down = spawnSync('bash', [join(PROJECT_ROOT, 'scripts/services-down.sh'), ...started.flatMap((name) => ['--only', name])], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  console.log(
    `services: stopped ${started.join(', ')}, which this run started${down.status === 0 ? '' : ` (services-down.sh failed: ${down.stderr.slice(-500)})`}`,
  );
}

/** The broker's pid (its JVM), from scripts/services-up.sh's pid file; undefined when there is none. */
export function brokerPid(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dir, 'kafka/kafka.pid'), 'utf8').trim());
    return existsSync(`/proc/${pid}/stat`) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Runs the kafka-topics.sh scripts/services-up.sh wrote (Kafka's own tool: no client library of ours); undefined when it is not there. */
export function kafkaTopics(dir: string, args: string[]): string | undefined {
  const tool = join(dir, 'kafka/kafka-topics.sh');
  if (!existsSync(tool)) return undefined;
  const run = spawnSync('bash', [tool, ...args], { encoding: 'utf8', timeout: 120_000 });
  if (run.status !== 0) throw new Error(`kafka-topics.sh ${args.join(' ')} failed: ${run.stderr.slice(-1_000)}`);
  return run.stdout;
}

/** The partition count of each of the run's topics, as the broker describes them; fails below 4 (or when a topic is missing). */
export function checkPartitions(dir: string, prefix: string): string {
  const described = kafkaTopics(dir, ['--describe', '--topic', `${prefix.replace(/\./g, '\\.')}.*`]);
  if (described === undefined) return `not checked (no ${join(dir, 'kafka/kafka-topics.sh')}: set SERVICES_DIR to the services' folder)`;
  const counts = partitionCounts(described);
  const figures = TOPIC_NAMES.map((topic) => [prefix + topic, counts.get(prefix + topic)] as const);
  const short = figures.filter(([, count]) => count === undefined || count < 4);
  if (short.length > 0) throw new Error(`topics with fewer than 4 partitions: ${short.map(([topic, count]) => `${topic} ${count ?? 'missing'}`).join(', ')}`);
  return figures.map(([topic, count]) => `${topic.slice(prefix.length)} ${count}`).join(', ');
}

/** Each topic's partition count in `kafka-topics.sh --describe`'s output (its topic lines; the partition lines under them are indented). */
export function partitionCounts(described: string): Map<string, number> {
  return new Map([...described.matchAll(/^Topic: (\S+)\s.*?PartitionCount: (\d+)/gm)].map((match) => [match[1]!, Number(match[2])]));
}
