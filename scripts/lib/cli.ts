// What the operator scripts (backup, restore, reseal-secrets) share: their arguments and the
// platform's configuration, with the exit codes they document (2: usage or configuration).
import { ConfigError, loadConfig, type Config } from '#shared/config.js';

/** The one folder argument a script takes; prints `usage` and exits 2 without it. */
export function folderArgument(usage: string): string {
  const [dir] = process.argv.slice(2);
  if (!dir) {
    process.stderr.write(`usage: ${usage}\n`);
    process.exit(2);
  }
  return dir;
}

/** The platform's configuration from `env`; a configuration error is printed and exits 2. */
export function configOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
}
