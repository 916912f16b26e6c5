import { checkUrl, type LookupFn, type ResolvedAddress } from './check-url';
import { compileAllowList, isPublicAddress, judgeAddress } from './address-policy';
import { OutboundError, type OutboundReason } from './outbound-error';

/** A resolver that must not be asked: IP literals are judged as they are. */
const noLookup: LookupFn = async (name) => {
  throw new Error(`unexpected DNS look-up of ${name}`);
};

const resolvingTo =
  (...addresses: string[]): LookupFn =>
  async () =>
    addresses.map((address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 }));

async function reasonOf(p: Promise<unknown>): Promise<OutboundReason | 'ok'> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (!(e instanceof OutboundError)) throw e;
    return e.reason;
  }
}

describe('checkUrl: the URL rules', () => {
  it.each([
    ['http://example.com/', 'scheme'],
    ['ftp://example.com/', 'scheme'],
    ['file:///etc/passwd', 'scheme'],
    ['gopher://127.0.0.1:6379/_FLUSHALL', 'scheme'],
    ['not a url', 'scheme'],
    ['//example.com/relative', 'scheme'],
    ['https://user:secret@8.8.8.8/', 'userinfo'],
    ['https://user@8.8.8.8/', 'userinfo'],
    ['https://:secret@8.8.8.8/', 'userinfo'],
  ])('%s is refused (%s)', async (url, reason) => {
    expect(await reasonOf(checkUrl(url, { lookup: noLookup }))).toBe(reason);
  });

  it('refuses a non-default port only where asked (image references), and names it', async () => {
    await expect(checkUrl('https://8.8.8.8:8443/a.png', { defaultPortOnly: true })).rejects.toMatchObject({
      reason: 'port',
      message: expect.stringContaining('443 (got 8443)'),
    });
    expect(await reasonOf(checkUrl('https://8.8.8.8:443/a.png', { defaultPortOnly: true }))).toBe('ok');
    const checked = await checkUrl('https://8.8.8.8:8443/hook', { lookup: noLookup });
    expect(checked).toMatchObject({ hostname: '8.8.8.8', port: 8443, addresses: [{ address: '8.8.8.8', family: 4 }] });
  });
});

describe('checkUrl: literal addresses', () => {
  it.each([
    // IPv4 private, loopback, link-local (the cloud metadata address among them), CGNAT, multicast, reserved.
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '127.0.0.1',
    '127.255.255.254',
    '169.254.169.254',
    '169.254.0.1',
    '100.64.0.1',
    '100.127.255.255',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '0.0.0.0',
    '0.1.2.3',
    '192.0.0.8',
    '192.0.2.1',
    '198.18.0.1',
    '198.51.100.7',
    '203.0.113.9',
    // The same addresses written the ways WHATWG URL parsing and inet_aton accept.
    '2130706433',
    '017700000001',
    '0177.0.0.1',
    '0x7f.0.0.1',
    '0x7f000001',
    '127.1',
    '0x7f.1',
    '0',
    '10.1',
    '0xA9FEA9FE',
    '0251.0376.0251.0376',
    '169.254.43518',
    // IPv6 loopback, unspecified, ULA, link-local, site-local, multicast.
    '[::1]',
    '[0:0:0:0:0:0:0:1]',
    '[::]',
    '[fc00::1]',
    '[fd12:3456:789a::1]',
    '[fe80::1]',
    '[fec0::1]',
    '[ff02::1]',
    // IPv4 hidden in IPv6: mapped, NAT64 to a private address, IPv4-compatible, and the transition ranges.
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '[::ffff:10.0.0.1]',
    '[::ffff:169.254.169.254]',
    '[64:ff9b::127.0.0.1]',
    '[64:ff9b::a9fe:a9fe]',
    '[64:ff9b::10.0.0.1]',
    '[64:ff9b:1::8.8.8.8]',
    '[::127.0.0.1]',
    '[2002:7f00:1::1]',
    '[2001:0:4136:e378::1]',
    '[2001:db8::1]',
    '[100::1]',
  ])('https://%s/ is refused as a non-public address', async (host) => {
    const error = await checkUrl(`https://${host}/x`, { lookup: noLookup }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboundError);
    expect(error).toMatchObject({
      reason: 'private_address',
      message: expect.stringMatching(/is not a public address \(.+\)/),
    });
  });

  it.each([
    ['8.8.8.8', '8.8.8.8', 4],
    ['1.1.1.1', '1.1.1.1', 4],
    // Just outside CGNAT (100.64.0.0/10) and the private 172.16.0.0/12.
    ['100.63.255.255', '100.63.255.255', 4],
    ['100.128.0.1', '100.128.0.1', 4],
    ['172.32.0.1', '172.32.0.1', 4],
    ['134744072', '8.8.8.8', 4],
    ['[2606:4700:4700::1111]', '2606:4700:4700::1111', 6],
    // A mapped address is connected to as the IPv4 address it names.
    ['[::ffff:8.8.8.8]', '8.8.8.8', 4],
    ['[64:ff9b::8.8.8.8]', '64:ff9b::808:808', 6],
  ])('https://%s/ is public and connects to %s', async (host, address, family) => {
    const checked = await checkUrl(`https://${host}/`, { lookup: noLookup });
    expect(checked.addresses).toEqual([{ address, family }]);
  });

  it('lets a private address through only when OUTBOUND_ALLOW_CIDRS names it', async () => {
    const allowCidrs = ['127.0.0.1/32'];
    expect(await reasonOf(checkUrl('https://127.0.0.1:8443/', { allowCidrs }))).toBe('ok');
    expect(await reasonOf(checkUrl('https://127.0.0.2:8443/', { allowCidrs }))).toBe('private_address');
    expect(await reasonOf(checkUrl('https://[::1]:8443/', { allowCidrs }))).toBe('private_address');
    expect(await reasonOf(checkUrl('https://[::ffff:127.0.0.1]:8443/', { allowCidrs }))).toBe('ok');
    expect(await reasonOf(checkUrl('https://[::1]/', { allowCidrs: ['::1'] }))).toBe('ok');
    expect(await reasonOf(checkUrl('https://10.1.2.3/', { allowCidrs: ['10.0.0.0/8'] }))).toBe('ok');
    expect(await reasonOf(checkUrl('https://169.254.169.254/', { allowCidrs: ['10.0.0.0/8'] }))).toBe(
      'private_address',
    );
  });

  it('judges an address again under another allow-list: a verdict is remembered per list, unchangeable', async () => {
    const allowCidrs = ['127.0.0.1/32'];
    for (let round = 0; round < 2; round++) {
      expect(await reasonOf(checkUrl('https://127.0.0.1:8443/', { allowCidrs }))).toBe('ok');
      expect(await reasonOf(checkUrl('https://127.0.0.1:8443/'))).toBe('private_address');
      expect(await reasonOf(checkUrl('https://127.0.0.1:8443/', { allowCidrs: ['10.0.0.0/8'] }))).toBe(
        'private_address',
      );
      expect(isPublicAddress('127.0.0.1')).toBe(false);
    }
    const verdict = judgeAddress('127.0.0.1', compileAllowList(allowCidrs));
    expect(verdict).toEqual({ allowed: true, address: '127.0.0.1', family: 4, range: 'loopback' });
    expect(() => Object.assign(verdict, { allowed: false })).toThrow(TypeError);
    expect(judgeAddress('127.0.0.1', compileAllowList(allowCidrs)).allowed).toBe(true);
  });

  it('isPublicAddress agrees', () => {
    expect(['8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'].map(isPublicAddress)).toEqual([true, true, true]);
    expect(['127.0.0.1', '::1', 'fd00::1', '::ffff:192.168.0.1', '64:ff9b::a00:1'].map(isPublicAddress)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('checkUrl: host names', () => {
  it('refuses a name that resolves to a private address, or to any private address among public ones', async () => {
    expect(await reasonOf(checkUrl('https://internal.example/', { lookup: resolvingTo('10.0.0.5') }))).toBe(
      'private_address',
    );
    expect(await reasonOf(checkUrl('https://meta.example/', { lookup: resolvingTo('169.254.169.254') }))).toBe(
      'private_address',
    );
    expect(await reasonOf(checkUrl('https://mixed.example/', { lookup: resolvingTo('8.8.8.8', '10.0.0.5') }))).toBe(
      'private_address',
    );
    expect(
      await reasonOf(checkUrl('https://mixed6.example/', { lookup: resolvingTo('2606:4700:4700::1111', '::1') })),
    ).toBe('private_address');
    expect(await reasonOf(checkUrl('https://mapped.example/', { lookup: resolvingTo('::ffff:127.0.0.1') }))).toBe(
      'private_address',
    );
    expect(await reasonOf(checkUrl('https://nat64.example/', { lookup: resolvingTo('64:ff9b::c0a8:1') }))).toBe(
      'private_address',
    );
    await expect(checkUrl('https://internal.example/', { lookup: resolvingTo('10.0.0.5') })).rejects.toThrow(
      'The host "internal.example" resolves to 10.0.0.5, which is not a public address (private network).',
    );
  });

  it('names the range that refused an address apart from the address (for logs a workspace reads)', async () => {
    const refusal = (url: string, ...addresses: string[]) =>
      checkUrl(url, { lookup: resolvingTo(...addresses) }).then(
        () => null,
        (e: unknown) => e as OutboundError,
      );
    const internal = await refusal('https://internal.example/', '10.0.0.5');
    expect(internal).toMatchObject({ reason: 'private_address', range: 'private' });
    expect(await refusal('https://meta.example/', '169.254.169.254')).toMatchObject({ range: 'linkLocal' });
    expect(await refusal('https://127.0.0.1/')).toMatchObject({ range: 'loopback' });
    expect(await refusal('https://mixed6.example/', '2606:4700::1111', '::1')).toMatchObject({ range: 'loopback' });
    expect(await refusal('http://example.com/')).toMatchObject({ reason: 'scheme', range: undefined });
  });

  it('returns every checked address of a public name, once each', async () => {
    const checked = await checkUrl('https://cdn.example/a?b=1', {
      lookup: resolvingTo('8.8.8.8', '2606:4700:4700::1111', '8.8.8.8', '::ffff:8.8.8.8'),
    });
    expect(checked.addresses).toEqual([
      { address: '8.8.8.8', family: 4 },
      { address: '2606:4700:4700::1111', family: 6 },
    ]);
    expect(checked.url.href).toBe('https://cdn.example/a?b=1');
  });

  it('answers dns for a name that does not resolve, resolves to nothing, or to something not an address', async () => {
    const failing: LookupFn = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.example'), { code: 'ENOTFOUND' });
    };
    expect(await reasonOf(checkUrl('https://nowhere.example/', { lookup: failing }))).toBe('dns');
    expect(await reasonOf(checkUrl('https://empty.example/', { lookup: resolvingTo() }))).toBe('dns');
    expect(await reasonOf(checkUrl('https://odd.example/', { lookup: resolvingTo('not-an-ip') }))).toBe('dns');
  });

  it('resolves through the system by default: localhost is loopback', async () => {
    expect(await reasonOf(checkUrl('https://localhost/'))).toBe('private_address');
  });
});
