import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/paths.js';

/**
 * Voluntary context switches of a child process over 1 s with nothing to do but `setup`: each is
 * one wait of its threads in the kernel, so each timer that wakes the event loop counts one.
 */
function idleWakes(setup: string): number {
  const script = `${setup}
const before = process.resourceUsage().voluntaryContextSwitches;
setTimeout(() => console.log(process.resourceUsage().voluntaryContextSwitches - before), 1000);`;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: PROJECT_ROOT, encoding: 'utf8' });
  expect(child.stderr).toBe('');
  return Number(child.stdout.trim());
}

describe('the metrics of an idle process', () => {
  it('do not wake its event loop 100 times a second (prom-client samples the event-loop delay every 10 ms by default)', () => {
    // The control: prom-client's default metrics as they come, which the measure must see.
    const stock = idleWakes(`import { collectDefaultMetrics, Registry } from 'prom-client'; collectDefaultMetrics({ register: new Registry() });`);
    expect(stock).toBeGreaterThanOrEqual(80);
    // The platform's registry: the delay histogram samples every EVENT_LOOP_SAMPLE_MS (100 ms), about 10 wakes.
    const ours = idleWakes(`import { createMetrics } from './shared/metrics.ts'; createMetrics();`);
    expect(ours).toBeLessThan(30);
  });
});
