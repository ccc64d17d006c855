/**
 * Helpers that had several copies and now have one home each (issue 15): HTML escaping, the sign-in email, a
 * provider's optional text, the system DNS resolver with its deadline, and the cross-tenant query option. Each
 * behaviour every former copy relied on is pinned here.
 */
import { EmailSchema } from '../../api/http/email.js';
import { escapeHtml } from '../../domain/html.js';
import { ANY_TENANT } from '../../entities/common.js';
import { DNS_DEADLINE_MS, resolverWithDeadline, systemResolver } from '../../integrations/dns.js';
import { nullableString } from '../../integrations/schemas.js';

describe('escapeHtml (domain/html.ts)', () => {
  test('the five characters that can end a text node or an attribute become entities; other text is kept', () => {
    expect(escapeHtml(`<a href="x" title='y'>Tom & Jerry</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;Tom &amp; Jerry&lt;/a&gt;',
    );
    expect(escapeHtml('Teatro Colón — 20:00')).toBe('Teatro Colón — 20:00');
  });

  test('escaping is not undone by escaping again: an entity a buyer typed stays visible as typed', () => {
    expect(escapeHtml('&amp;')).toBe('&amp;amp;');
  });
});

describe('EmailSchema (api/http/email.ts)', () => {
  test('an address is kept in lower case, so one inbox is one account and one rate-limit key', () => {
    expect(EmailSchema.parse('Ana.Gomez@Example.COM')).toBe('ana.gomez@example.com');
  });

  test('not an address, or longer than 254 characters: refused', () => {
    expect(EmailSchema.safeParse('not-an-email').success).toBe(false);
    expect(EmailSchema.safeParse(`${'a'.repeat(64)}@${'b'.repeat(185)}.test`).success).toBe(false);
  });
});

describe('nullableString (integrations/schemas.ts)', () => {
  test('a string stays; null and a missing field both read as null', () => {
    expect(nullableString.parse('approved')).toBe('approved');
    expect(nullableString.parse(null)).toBeNull();
    expect(nullableString.parse(undefined)).toBeNull();
    expect(nullableString.safeParse(42).success).toBe(false);
  });
});

describe('the system resolver and its deadline (integrations/dns.ts), for webhook registration and delivery', () => {
  test('every address of the name, IPv4 and IPv6, with its family', async () => {
    const resolve = resolverWithDeadline(
      async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1::1', family: 6 },
      ],
      1_000,
    );
    expect(await resolve('example.test')).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ]);
  });

  test('a DNS server that never answers is given up on at the deadline', async () => {
    const resolve = resolverWithDeadline(() => new Promise(() => undefined), 50);
    const started = Date.now();
    await expect(resolve('hung.example.test')).rejects.toThrow(/DNS timeout/);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  test('the system resolver answers from the system (localhost), with a 3 s deadline', async () => {
    expect(DNS_DEADLINE_MS).toBe(3_000);
    const addresses = await systemResolver('localhost');
    expect(addresses.length).toBeGreaterThan(0);
    expect(addresses.every(({ family }) => family === 4 || family === 6)).toBe(true);
  });
});

describe('ANY_TENANT (entities/common.ts)', () => {
  test('turns off the tenant filter only: soft-deleted rows stay hidden', () => {
    expect(ANY_TENANT).toEqual({ filters: { tenant: false } });
  });
});
