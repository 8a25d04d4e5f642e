import { describe, expect, it } from 'vitest';
import { GuardRefusal, checkTarget, internalRange, type Resolver } from './guard.js';

/** Names a test resolves without DNS (no network here): a stub in place of the system resolver. */
const stubResolver =
  (table: Record<string, string[]>): Resolver =>
  async (host) => {
    const addresses = table[host];
    if (!addresses) throw Object.assign(new Error(`no such host ${host}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

const resolver = stubResolver({
  'public.example': ['93.184.216.34'],
  'rebind.example': ['10.1.2.3'],
  'mixed.example': ['93.184.216.34', '192.168.0.10'],
  'v6private.example': ['2606:2800:220:1::1', 'fd00::5'],
  '127.0.0.1.nip.example': ['127.0.0.1'],
  'meta.example': ['169.254.169.254'],
});

/** Every one of these must be refused: the bypass corpus. */
const BYPASS_CORPUS = [
  'http://127.0.0.1/',
  'http://127.1/',
  'http://0x7f.1/',
  'http://2130706433/',
  'http://0177.0.0.1/',
  'http://017700000001/',
  'http://0x7f000001/',
  'http://0x7f.0.0.1/',
  'http://１２７.０.０.１/',
  'http://0/',
  'http://0.0.0.0/',
  'http://[::]/',
  'http://[::1]/',
  'http://[0:0:0:0:0:0:0:1]/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::ffff:7f00:1]/',
  'http://[::127.0.0.1]/',
  'http://[::7f00:1]/',
  'http://[0:0:0:0:0:ffff:127.0.0.1]/',
  'http://[::ffff:169.254.169.254]/',
  'http://[64:ff9b::7f00:1]/',
  'http://[64:ff9b::a9fe:a9fe]/',
  'http://[64:ff9b::10.0.0.1]/',
  'http://[64:ff9b:1::a00:1]/',
  'http://169.254.169.254/latest/meta-data/',
  'http://[fd00:ec2::254]/latest/meta-data/',
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://metadata.google.internal./computeMetadata/v1/',
  'http://10.0.0.1/',
  'http://172.16.5.4/',
  'http://192.168.1.1/',
  'http://100.64.0.1/',
  'http://169.254.10.10/',
  'http://[fc00::1]/',
  'http://[fd12:3456::1]/',
  'http://[fe80::1]/',
  'http://224.0.0.1/',
  'http://[ff02::1]/',
  'http://255.255.255.255/',
  'http://240.0.0.1/',
  'http://192.0.2.1/',
  'http://user:pass@public.example/',
  'http://public.example@127.0.0.1/',
  'http://127.0.0.1#@public.example/',
  'http://127.0.0.1:8080\\@public.example/',
  'http://localhost/',
  'http://LOCALHOST./',
  'http://rebind.example/',
  'http://mixed.example/',
  'http://v6private.example/',
  'http://127.0.0.1.nip.example/',
  'http://meta.example/',
  'http://does-not-exist.example/',
  'ftp://public.example/',
  'file:///etc/passwd',
  'gopher://public.example:70/',
  'javascript:alert(1)',
  'http://public.example:22/',
  'http://public.example:25/',
  'http://public.example:6000/',
  'http://public.example:10080/',
  'https://public.example:8/',
  'not a url',
];

describe('SSRF guard', () => {
  it(`refuses every URL of the bypass corpus (${BYPASS_CORPUS.length} URLs; names resolved by a stub resolver: no DNS here, localhost by the system's)`, async () => {
    expect(BYPASS_CORPUS.length).toBeGreaterThanOrEqual(30);
    const admitted: string[] = [];
    for (const url of BYPASS_CORPUS) {
      const useSystem = /localhost/i.test(url);
      try {
        await checkTarget(url, { allowlist: [], resolver: useSystem ? undefined : resolver });
        admitted.push(url);
      } catch (error) {
        expect(error, url).toBeInstanceOf(GuardRefusal);
      }
    }
    expect(admitted).toEqual([]);
  });

  it('admits public addresses and names, and connects to the address it checked', async () => {
    const named = await checkTarget('https://public.example/hook?x=1', { allowlist: [], resolver });
    expect(named).toMatchObject({ host: 'public.example', port: 443, address: '93.184.216.34', family: 4 });
    expect((await checkTarget('http://93.184.216.34:8080/', { allowlist: [] })).port).toBe(8080);
    expect((await checkTarget('https://[2606:2800:220:1:248:1893:25c8:1946]/', { allowlist: [] })).family).toBe(6);
    // A public IPv4 address in NAT64 form is public.
    expect((await checkTarget('http://[64:ff9b::5db8:d822]/', { allowlist: [] })).address).toBe('64:ff9b::5db8:d822');
  });

  it('lets WEBHOOK_ALLOWLIST admit internal hosts and ranges, never metadata endpoints', async () => {
    await expect(checkTarget('http://127.0.0.1:9000/', { allowlist: ['127.0.0.1/32'] })).resolves.toMatchObject({ address: '127.0.0.1' });
    await expect(checkTarget('http://rebind.example/', { allowlist: ['rebind.example'], resolver })).resolves.toMatchObject({ address: '10.1.2.3' });
    await expect(checkTarget('http://rebind.example/', { allowlist: ['10.0.0.0/8'], resolver })).resolves.toMatchObject({ address: '10.1.2.3' });
    await expect(checkTarget('http://192.168.0.1/', { allowlist: ['10.0.0.0/8'] })).rejects.toThrow(/range private/);
    await expect(checkTarget('http://169.254.169.254/', { allowlist: ['169.254.0.0/16'] })).rejects.toThrow(/metadata/);
    await expect(checkTarget('http://meta.example/', { allowlist: ['meta.example'], resolver })).rejects.toThrow(/metadata/);
    // What the allow-list admitted is marked, so that its answers are not shown to tenants (issue 23).
    await expect(checkTarget('http://127.0.0.1:9000/', { allowlist: ['127.0.0.1/32'] })).resolves.toMatchObject({ allowlisted: true });
    await expect(checkTarget('http://rebind.example/', { allowlist: ['rebind.example'], resolver })).resolves.toMatchObject({ allowlisted: true });
    await expect(checkTarget('https://public.example/hook', { allowlist: ['public.example'], resolver })).resolves.toMatchObject({ allowlisted: false });
    await expect(checkTarget('http://93.184.216.34:8080/', { allowlist: [] })).resolves.toMatchObject({ allowlisted: false });
    // The allow-list does not open bad ports.
    await expect(checkTarget('http://127.0.0.1:22/', { allowlist: ['127.0.0.1'] })).rejects.toThrow(/port 22/);
  });

  it('names the range of an internal address', () => {
    expect(internalRange('10.0.0.1')).toBe('private');
    expect(internalRange('::ffff:127.0.0.1')).toBe('ipv4Mapped loopback');
    expect(internalRange('64:ff9b::a00:1')).toBe('rfc6052 private');
    expect(internalRange('8.8.8.8')).toBeUndefined();
  });
});
