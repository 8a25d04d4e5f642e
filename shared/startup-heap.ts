import { setFlagsFromString } from 'node:v8';

/**
 * Keeps a process's start-up from sizing V8's young generation for its whole life. Loading the
 * modules and warming the caches leaves many objects alive across scavenges, which makes V8 grow the
 * young generation to its 32 MB maximum (two 16 MB semi-spaces) and keep it, resident, on a node that
 * then idles: a third of an ingest node's memory (issue 35: an ingest node idles at ≤ 120 MB). The
 * growth factor is 1 until `startupDone()` (the young generation stays at its initial 2 MB), then
 * V8's default 2 again, so a process under load grows it as that load needs. Imported first by the
 * entry points (ESM evaluates imports in order). An operator's own `--semi-space-growth-factor`
 * (command line or NODE_OPTIONS) is left alone.
 */
const chosenByOperator = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((flag) => flag.includes('semi-space'));
if (!chosenByOperator) setFlagsFromString('--semi-space-growth-factor=1');

/** Start-up is over: the young generation may grow with the load again (V8's default factor). */
export function startupDone(): void {
  if (!chosenByOperator) setFlagsFromString('--semi-space-growth-factor=2');
}
