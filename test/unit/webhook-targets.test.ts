import { signBody, signTimestampedBody, verifyWebhookSignature } from '../../domain/webhook-signature.js';
import { checkWebhookTarget, type HostResolver, isBlockedAddress } from '../../domain/webhook-targets.js';
import { decryptSecret, encryptSecret } from '../../entities/webhook.js';

const resolverOf =
  (table: Record<string, string[]>): HostResolver =>
  async (hostname) => {
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

describe('webhook URL rules (contract 4.15)', () => {
  test.each([
    '127.0.0.1',
    '127.8.9.10',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '0.0.0.0',
    '100.64.0.1',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '224.0.0.1',
  ])('%s is loopback, private, link-local or unspecified: refused', (address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  test.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])(
    '%s is public: allowed',
    (address) => {
      expect(isBlockedAddress(address)).toBe(false);
    },
  );

  const resolve = resolverOf({
    'hooks.example.com': ['93.184.216.34'],
    'loopback.example.test': ['127.0.0.1'],
    'mixed.example.test': ['93.184.216.34', '10.0.0.7'],
    'v6loop.example.test': ['::1'],
  });

  test.each([
    ['ftp://hooks.example.com/x', 'scheme_not_allowed'],
    ['file:///etc/passwd', 'scheme_not_allowed'],
    ['not a url', 'invalid_url'],
    ['https://user:pass@hooks.example.com/x', 'credentials_in_url'],
    ['http://localhost:8080/x', 'localhost'],
    ['http://api.localhost/x', 'localhost'],
    ['http://127.0.0.1/x', 'private_address'],
    ['http://[::1]:9000/x', 'private_address'],
    ['http://[fe80::1]/x', 'private_address'],
    ['http://169.254.169.254/latest/meta-data', 'private_address'],
    ['http://0.0.0.0/x', 'private_address'],
    ['https://loopback.example.test/x', 'resolves_to_private_address'],
    ['https://mixed.example.test/x', 'resolves_to_private_address'],
    ['https://v6loop.example.test/x', 'resolves_to_private_address'],
  ])('%s is refused (%s)', async (url, reason) => {
    const check = await checkWebhookTarget(url, { resolve });
    expect(check).toMatchObject({ ok: false, reason });
  });

  test('a public name is accepted with the addresses it resolves to', async () => {
    const check = await checkWebhookTarget('https://hooks.example.com/tickets', { resolve });
    expect(check).toMatchObject({ ok: true, hostname: 'hooks.example.com', addresses: [{ address: '93.184.216.34' }] });
  });

  test('a name that does not resolve is accepted at registration, refused at delivery', async () => {
    expect((await checkWebhookTarget('https://nowhere.example.test/', { resolve, requireResolution: false })).ok).toBe(
      true,
    );
    expect(await checkWebhookTarget('https://nowhere.example.test/', { resolve })).toMatchObject({
      ok: false,
      reason: 'unresolvable',
    });
  });

  test('allowPrivate (on-premise installs, tests) lifts only the address rules', async () => {
    expect((await checkWebhookTarget('http://127.0.0.1:9/x', { resolve, allowPrivate: true })).ok).toBe(true);
    expect(await checkWebhookTarget('ftp://127.0.0.1/x', { resolve, allowPrivate: true })).toMatchObject({ ok: false });
  });
});

describe('webhook URL rules: IPv4 hidden inside IPv6 (contract 4.15: localhost, private and link-local rejected)', () => {
  test.each([
    // ::/96, IPv4-compatible (deprecated): refused whatever it embeds
    '::127.0.0.1',
    '::7f00:1',
    '::10.0.0.1',
    '::8.8.8.8',
    '0:0:0:0:0:0:7f00:1',
    // ::ffff:0:0/96, IPv4-mapped, every spelling
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::FFFF:7F00:0001',
    '0:0:0:0:0:ffff:7f00:1',
    '0000:0000:0000:0000:0000:ffff:a9fe:a9fe',
    '::ffff:169.254.169.254',
    // ::ffff:0:0:0/96, IPv4-translated
    '::ffff:0:7f00:1',
    '::ffff:0:127.0.0.1',
    '::ffff:0:a00:1',
    // 2002::/16, 6to4 over a non-public IPv4
    '2002:7f00:1::1',
    '2002:7f00:0001:0:0:0:0:1',
    '2002:a00:1::',
    '2002:c0a8:101::1',
    '2002:a9fe:a9fe::1',
    // 64:ff9b::/96, NAT64 with a non-public IPv4; 64:ff9b:1::/48 local-use NAT64
    '64:ff9b::127.0.0.1',
    '64:ff9b::7f00:1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b::c0a8:101',
    '64:ff9b:1::8.8.8.8',
  ])('%s embeds a loopback, private or link-local IPv4 (or is a range refused outright): refused', (address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  test.each(['2002:808:808::1', '64:ff9b::8.8.8.8', '64:ff9b::808:808', '::ffff:0:808:808', '2001:4860:4860::8888'])(
    '%s embeds a public IPv4 or is plain public IPv6: allowed',
    (address) => {
      expect(isBlockedAddress(address)).toBe(false);
    },
  );

  const resolve = resolverOf({
    'compat.example.test': ['::7f00:1'],
    'sixtofour.example.test': ['2002:7f00:1::1'],
    'nat64.example.test': ['64:ff9b::a00:1'],
  });

  // Registration and delivery both go through checkWebhookTarget (api/routes/v1/organizer-webhooks.ts and
  // activities/webhooks.ts), so literals and resolved addresses are both covered here.
  test.each([
    'http://[::127.0.0.1]/x',
    'http://[::ffff:0:7f00:1]/x',
    'http://[2002:7f00:1::1]/x',
    'http://[::ffff:7f00:1]:8080/x',
    'http://[64:ff9b::10.0.0.1]/x',
  ])('%s is refused as a literal', async (url) => {
    expect(await checkWebhookTarget(url, { resolve })).toMatchObject({ ok: false, reason: 'private_address' });
  });

  test.each(['https://compat.example.test/x', 'https://sixtofour.example.test/x', 'https://nat64.example.test/x'])(
    '%s is refused at delivery when its name resolves to an embedded private IPv4',
    async (url) => {
      const check = await checkWebhookTarget(url, { resolve, requireResolution: true });
      expect(check).toMatchObject({ ok: false, reason: 'resolves_to_private_address' });
    },
  );
});

describe('webhook signatures (contract part 6 plus the timestamped variant)', () => {
  const secret = 'whsec_test_secret_value';
  const bodySentAt = (sentAt: Date) =>
    JSON.stringify({ event: 'sale.confirmed', data: { saleId: 's' }, sentAt: sentAt.toISOString() });
  const body = bodySentAt(new Date());

  test('a receiver verifies the hex HMAC-SHA256 of the raw body and the timestamped signature', () => {
    const timestamp = Math.floor(Date.now() / 1000);
    expect(
      verifyWebhookSignature({
        secret,
        rawBody: body,
        signature: signBody(secret, body),
        timestamp: String(timestamp),
        signatureV2: signTimestampedBody(secret, timestamp, body),
      }),
    ).toEqual({ ok: true });
  });

  test('a tampered body, a wrong secret or an old timestamp (replay) is rejected', () => {
    const old = Math.floor(Date.now() / 1000) - 3600;
    expect(verifyWebhookSignature({ secret, rawBody: `${body} `, signature: signBody(secret, body) }).ok).toBe(false);
    expect(verifyWebhookSignature({ secret: 'other', rawBody: body, signature: signBody(secret, body) }).ok).toBe(
      false,
    );
    expect(
      verifyWebhookSignature({
        secret,
        rawBody: body,
        signature: signBody(secret, body),
        timestamp: String(old),
        signatureV2: signTimestampedBody(secret, old, body),
      }),
    ).toEqual({ ok: false, reason: 'stale_timestamp' });
  });

  test('the contract signature alone is fresh only within the window: a recorded body replayed later is refused', () => {
    const recorded = bodySentAt(new Date(Date.now() - 10 * 60_000));
    expect(verifyWebhookSignature({ secret, rawBody: recorded, signature: signBody(secret, recorded) })).toEqual({
      ok: false,
      reason: 'stale_sent_at',
    });
    // Within the window it verifies; a body without a signed sentAt never does.
    const fresh = bodySentAt(new Date(Date.now() - 60_000));
    expect(verifyWebhookSignature({ secret, rawBody: fresh, signature: signBody(secret, fresh) })).toEqual({
      ok: true,
    });
    const undated = '{"event":"sale.confirmed","data":{"saleId":"s"}}';
    expect(verifyWebhookSignature({ secret, rawBody: undated, signature: signBody(secret, undated) }).ok).toBe(false);
  });

  test('signing secrets are stored with AES-256-GCM: ciphertext differs each time, decrypts back, tampering is detected', () => {
    const key = '6465762d6f6e6c792d6b65792d646f2d6e6f742d7573652d696e2d70726f6421';
    const a = encryptSecret(secret, key);
    const b = encryptSecret(secret, key);
    expect(a).not.toBe(b);
    expect(a).not.toContain(secret);
    expect(decryptSecret(a, key)).toBe(secret);
    const parts = a.split(':');
    parts[3] = Buffer.from('tampered').toString('base64url');
    expect(() => decryptSecret(parts.join(':'), key)).toThrow();
  });
});
