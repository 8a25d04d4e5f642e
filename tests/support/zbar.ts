import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * zbarimg (zbar-tools), the reader people scan QR images with, over PNGs written to a scratch
 * folder: `read` answers the text it finds, or undefined when it finds no code; `close` removes the folder.
 */
export function zbarReader(): { read(png: Buffer): Promise<string | undefined>; close(): void } {
  const scratch = mkdtempSync(join(tmpdir(), 'qr-scan-'));
  let files = 0;
  return {
    async read(png) {
      const file = join(scratch, `${files++}.png`);
      writeFileSync(file, png);
      try {
        return (await run('zbarimg', ['--quiet', '--raw', file])).stdout.trim();
      } catch (error) {
        if ((error as { code?: unknown }).code === 'ENOENT')
          throw new Error('zbarimg not found: run scripts/ensure-zbar.sh (Debian zbar-tools)', { cause: error });
        return undefined; // exit status 4: no symbol found
      }
    },
    close: () => rmSync(scratch, { recursive: true, force: true }),
  };
}
