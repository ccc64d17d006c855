import {
  acceptedReturnUrl,
  formatHostPattern,
  parseHostList,
  parseHostPattern,
  parseHostPatterns,
  RETURN_URL_MAX_LENGTH,
  returnUrlForOrder,
} from '../../domain/return-url.js';

const allow = (...entries: string[]) => parseHostPatterns(entries);

describe('returnUrl allowlist matching (contract 4.2: an invalid returnUrl is ignored)', () => {
  const shop = allow('shop.example.com');

  test('an exact host entry accepts that host on any path and port', () => {
    expect(acceptedReturnUrl('https://shop.example.com/thanks?order=1', shop)).toBe(
      'https://shop.example.com/thanks?order=1',
    );
    expect(acceptedReturnUrl('https://shop.example.com:8443/', shop)).toBe('https://shop.example.com:8443/');
  });

  test('an exact host entry does not accept its subdomains, its parent or look-alike hosts', () => {
    for (const url of [
      'https://evil.shop.example.com/',
      'https://example.com/',
      'https://evil-shop.example.com/',
      'https://shop.example.com.evil.net/',
      'https://shopexample.com/',
      'https://evil.com/shop.example.com',
      'https://evil.com/?next=https://shop.example.com',
    ]) {
      expect(acceptedReturnUrl(url, shop)).toBeNull();
    }
  });

  test('a look-alike registrable domain never matches (evil-good.com for good.com)', () => {
    const good = allow('good.com', '*.good.com');
    expect(acceptedReturnUrl('https://evil-good.com/', good)).toBeNull();
    expect(acceptedReturnUrl('https://evilgood.com/', good)).toBeNull();
    expect(acceptedReturnUrl('https://good.com.evil.com/', good)).toBeNull();
  });

  test('*.domain accepts subdomains at any depth but not the domain itself', () => {
    const wildcard = allow('*.example.com');
    expect(acceptedReturnUrl('https://a.example.com/', wildcard)).toBe('https://a.example.com/');
    expect(acceptedReturnUrl('https://a.b.example.com/x', wildcard)).toBe('https://a.b.example.com/x');
    expect(acceptedReturnUrl('https://example.com/', wildcard)).toBeNull();
    expect(acceptedReturnUrl('https://badexample.com/', wildcard)).toBeNull();
  });

  test('userinfo is refused, so https://good.com@evil.com cannot pass as good.com', () => {
    const good = allow('good.com', 'evil.com');
    expect(acceptedReturnUrl('https://good.com@evil.com/', good)).toBeNull();
    expect(acceptedReturnUrl('https://user:pass@good.com/', good)).toBeNull();
    expect(acceptedReturnUrl('https://good.com@evil.com/', allow('good.com'))).toBeNull();
  });

  test('a backslash reads as a path, as browsers read it: the host stays the one before it', () => {
    expect(acceptedReturnUrl('https://good.com\\@evil.com', allow('evil.com'))).toBeNull();
    expect(acceptedReturnUrl('https://good.com\\@evil.com', allow('good.com'))).toBe('https://good.com/@evil.com');
  });

  test('only https, except http on loopback hosts', () => {
    const hosts = allow('shop.example.com', 'localhost', '127.0.0.1', '[::1]');
    expect(acceptedReturnUrl('http://shop.example.com/', hosts)).toBeNull();
    expect(acceptedReturnUrl('javascript:alert(1)//shop.example.com', hosts)).toBeNull();
    expect(acceptedReturnUrl('ftp://shop.example.com/', hosts)).toBeNull();
    expect(acceptedReturnUrl('//shop.example.com/', hosts)).toBeNull();
    expect(acceptedReturnUrl('/thanks', hosts)).toBeNull();
    expect(acceptedReturnUrl('http://localhost:5173/thanks', hosts)).toBe('http://localhost:5173/thanks');
    expect(acceptedReturnUrl('http://127.0.0.1:3000/x', hosts)).toBe('http://127.0.0.1:3000/x');
    expect(acceptedReturnUrl('http://[::1]:3000/x', hosts)).toBe('http://[::1]:3000/x');
  });

  test('http on loopback still needs the loopback host in the allowlist', () => {
    expect(acceptedReturnUrl('http://localhost:5173/', allow('shop.example.com'))).toBeNull();
  });

  test('upper case, a trailing dot and internationalised names are compared as browsers resolve them', () => {
    expect(acceptedReturnUrl('https://SHOP.Example.COM/Path', allow('shop.example.com'))).toBe(
      'https://shop.example.com/Path',
    );
    expect(acceptedReturnUrl('https://shop.example.com./', allow('shop.example.com'))).toBe(
      'https://shop.example.com./',
    );
    expect(acceptedReturnUrl('https://BÜCHER.example/', allow('bücher.example'))).toBe(
      'https://xn--bcher-kva.example/',
    );
    expect(acceptedReturnUrl('https://bücher.example/', allow('xn--bcher-kva.example'))).toBe(
      'https://xn--bcher-kva.example/',
    );
    expect(acceptedReturnUrl('https://bucher.example/', allow('bücher.example'))).toBeNull();
  });

  test('an empty allowlist accepts nothing, and a URL longer than the stored limit is ignored', () => {
    expect(acceptedReturnUrl('https://shop.example.com/', [])).toBeNull();
    const long = `https://shop.example.com/${'a'.repeat(RETURN_URL_MAX_LENGTH)}`;
    expect(acceptedReturnUrl(long, shop)).toBeNull();
    expect(acceptedReturnUrl('not a url', shop)).toBeNull();
  });
});

describe('allowlist entries', () => {
  test('entries are canonicalised: lower case, punycode, no trailing dot', () => {
    expect(formatHostPattern(parseHostPattern(' Shop.Example.COM. ')!)).toBe('shop.example.com');
    expect(formatHostPattern(parseHostPattern('*.Bücher.example')!)).toBe('*.xn--bcher-kva.example');
  });

  test.each([
    '',
    'https://shop.example.com',
    'shop.example.com/path',
    'shop.example.com:443',
    'user@shop.example.com',
    '*.com',
    '*',
    'a.*.example.com',
    '*.127.0.0.1',
    'shop example.com',
    '::1',
  ])('%j is not a host pattern', (entry) => {
    expect(parseHostPattern(entry)).toBeNull();
  });

  test('a list with one bad entry is refused whole, naming the entry', () => {
    expect(() => parseHostPatterns(['shop.example.com', 'https://bad.example'])).toThrow(/"https:\/\/bad.example"/);
    expect(parseHostList('localhost, 127.0.0.1,,')).toEqual([
      { kind: 'exact', host: 'localhost' },
      { kind: 'exact', host: '127.0.0.1' },
    ]);
  });
});

describe('which allowlist applies to an order', () => {
  const enterprise = {
    kind: 'enterprise' as const,
    allowlist: allow('shop.acme.test'),
    servedWorkspaceIds: ['ws-served'],
  };

  test("an enterprise session uses the enterprise's allowlist for a workspace it serves", () => {
    expect(returnUrlForOrder('https://shop.acme.test/done', enterprise, 'ws-served')).toBe(
      'https://shop.acme.test/done',
    );
  });

  test("an enterprise's allowlist does not apply to a workspace it does not serve", () => {
    expect(returnUrlForOrder('https://shop.acme.test/done', enterprise, 'ws-other')).toBeNull();
  });

  test('a first-party session uses the service-wide list only', () => {
    const service = { kind: 'service' as const, allowlist: allow('localhost') };
    expect(returnUrlForOrder('http://localhost:5173/thanks', service, 'ws-any')).toBe('http://localhost:5173/thanks');
    expect(returnUrlForOrder('https://shop.acme.test/done', service, 'ws-any')).toBeNull();
  });
});
