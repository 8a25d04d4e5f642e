// The event loop's time by stage of a visit, from a CPU profile of the platform under load
// (`PROFILE=1 bash bench/run.sh platform` writes one into bench-profiles/):
//   bash bench/run.sh profile-stages bench-profiles/<file>.cpuprofile [from-second] [to-second]
// Without a window it prints how busy each second of the profile was (pick the load's seconds from
// it); with one, each sample in the window goes to the first stage (in the order below) that a
// frame of its stack belongs to, and the shares of the busy time are printed. The
// per-stage table of docs/benchmarks.md is made this way (its µs are these shares of the event loop's CPU per visit).
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Stages in the order a sample is matched against them: the first a frame of its stack matches. */
const STAGES: [string, RegExp][] = [
  ['garbage collection (on the event loop)', /^\(garbage collector\)/],
  ['idle', /^\(idle\)/],
  ['events: visit.new built, written, read by the dispatcher', /emitMany|eventsOf |toMessages|services\/worker\/webhooks|decodeEvents/],
  ['rows encoded for ClickHouse', /encodeVisits|insertVisits/],
  ['enrichment: user agent, geo, visitor hash, bursts, uniques', /deriveAll|^enrich |firstOfDay/],
  ["decoding and validation of the log's messages (JSON, zod)", /decodeVisit|decodeMessage|^prepare .*services\/enricher/],
  ["durable log: the edge's publish", /visit-producer|^publish .*shared\/message-log|encodeSegment/],
  ['durable log: commits and reads', /shared\/message-log\/lmdb|node_modules\/lmdb|node_modules\/msgpackr/],
  ['HTTP: parse, decide, answer the redirect', /parserOnHeadersComplete|redirect\.routes|services\/ingest\/app|node:_http|node:net|stream_base_commons/],
];

const [file, from, to] = process.argv.slice(2);
if (!file) {
  console.error('usage: bash bench/run.sh profile-stages <file.cpuprofile> [from-second to-second]');
  process.exit(1);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
const frameName = (node: ProfileNode) => `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url}`;

if (from === undefined) {
  const perSecond = new Map<number, { busy: number; all: number }>();
  let at = 0;
  profile.samples.forEach((id, index) => {
    at += profile.timeDeltas[index]!;
    const second = Math.floor(at / 1e6);
    const entry = perSecond.get(second) ?? { busy: 0, all: 0 };
    entry.all += profile.timeDeltas[index]!;
    if (byId.get(id)!.callFrame.functionName !== '(idle)') entry.busy += profile.timeDeltas[index]!;
    perSecond.set(second, entry);
  });
  console.log('second: % of it the event loop was busy');
  console.log([...perSecond].map(([second, { busy, all }]) => `${second}: ${Math.round((busy / all) * 100)}`).join('  '));
  process.exit(0);
}

const [start, end] = [Number(from) * 1e6, Number(to) * 1e6];
const time = new Map<string, number>();
let at = 0;
profile.samples.forEach((id, index) => {
  at += profile.timeDeltas[index]!;
  if (at < start || at >= end) return;
  const frames: string[] = [];
  for (let node: number | undefined = id; node !== undefined; node = parentOf.get(node)) frames.push(frameName(byId.get(node)!));
  const stage = STAGES.find(([, pattern]) => frames.some((frame) => pattern.test(frame)))?.[0] ?? 'other';
  time.set(stage, (time.get(stage) ?? 0) + profile.timeDeltas[index]!);
});
const busy = [...time].filter(([stage]) => stage !== 'idle').reduce((sum, [, us]) => sum + us, 0);
console.log(`seconds ${from}–${to}: the event loop busy ${((busy / (end - start)) * 100).toFixed(0)} % of the time`);
for (const [stage, us] of [...time].filter(([name]) => name !== 'idle').sort((a, b) => b[1] - a[1])) {
  console.log(`${((us / busy) * 100).toFixed(1).padStart(5)} %  ${stage}`);
}
