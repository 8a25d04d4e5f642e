// An export downloaded over a real socket, as a client downloads it: its size, its rows (lines
// less the header, for CSV) and how long it took.
import { get } from 'node:http';

export interface Downloaded {
  bytes: number;
  /** Line breaks in the answer (a CSV's rows and its header line). */
  lines: number;
  seconds: number;
}

/** GET /api/v1/export of one link in a format from the server on a loopback port; fails on any status but 200. */
export function downloadExport(port: number, format: string, linkId: string, headers: Record<string, string>): Promise<Downloaded> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let bytes = 0;
    let lines = 0;
    get({ host: '127.0.0.1', port, path: `/api/v1/export?format=${format}&link_id=${linkId}`, headers }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`export ${format}: ${response.statusCode}`));
        return;
      }
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
      });
      response.on('end', () => resolve({ bytes, lines, seconds: (performance.now() - started) / 1000 }));
      response.on('error', reject);
    }).on('error', reject);
  });
}
