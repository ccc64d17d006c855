import fc from 'fast-check';
import {
  isSaleReference,
  isTicketCode,
  parseSaleReference,
  REFERENCE_ALPHABET,
  SALE_REFERENCE_RANDOM_BYTES,
  saleReferenceFromBytes,
  TICKET_CODE_LENGTH,
  TICKET_CODE_RANDOM_BYTES,
  ticketCodeFromBytes,
} from '../../domain/codes.js';

const referenceBytes = fc.uint8Array({
  minLength: SALE_REFERENCE_RANDOM_BYTES,
  maxLength: SALE_REFERENCE_RANDOM_BYTES,
});
const ticketBytes = fc.uint8Array({ minLength: TICKET_CODE_RANDOM_BYTES, maxLength: TICKET_CODE_RANDOM_BYTES });
const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

describe('sale reference', () => {
  test('the alphabet has 32 symbols and none of 0, O, 1, I', () => {
    expect(new Set(REFERENCE_ALPHABET).size).toBe(32);
    expect(REFERENCE_ALPHABET).not.toMatch(/[0O1I]/);
  });

  test('a reference is FT- plus 8 characters, 5 bits per character from 5 bytes (known vectors)', () => {
    expect(saleReferenceFromBytes(new Uint8Array([0, 0, 0, 0, 0]))).toBe('FT-22222222');
    expect(saleReferenceFromBytes(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff]))).toBe('FT-ZZZZZZZZ');
    // 00001000 01000010 00010000 10000100 00100001 = eight groups of 00001 → alphabet[1] = '3'
    expect(saleReferenceFromBytes(new Uint8Array([0x08, 0x42, 0x10, 0x84, 0x21]))).toBe('FT-33333333');
  });

  test('every alphabet symbol is reachable in every position (no biased or dead symbol)', () => {
    for (let i = 0; i < 32; i++) {
      expect(saleReferenceFromBytes(new Uint8Array([0, 0, 0, 0, i])).at(-1)).toBe(REFERENCE_ALPHABET[i]);
      expect(saleReferenceFromBytes(new Uint8Array([i << 3, 0, 0, 0, 0])).at(3)).toBe(REFERENCE_ALPHABET[i]);
    }
  });

  test('every generated reference is well-formed and free of ambiguous characters', () => {
    fc.assert(
      fc.property(referenceBytes, (bytes) => {
        const reference = saleReferenceFromBytes(bytes);
        expect(isSaleReference(reference)).toBe(true);
        expect(reference).toHaveLength(11);
        expect(reference.slice(3)).not.toMatch(/[0O1I]/);
      }),
    );
  });

  test('different bytes give different references (all 40 bits are kept)', () => {
    fc.assert(
      fc.property(referenceBytes, referenceBytes, (a, b) => {
        fc.pre(!sameBytes(a, b));
        expect(saleReferenceFromBytes(a)).not.toBe(saleReferenceFromBytes(b));
      }),
    );
  });

  test('fewer than 5 random bytes is refused; extra bytes are ignored', () => {
    expect(() => saleReferenceFromBytes(new Uint8Array(4))).toThrow(RangeError);
    expect(saleReferenceFromBytes(new Uint8Array([0, 0, 0, 0, 0, 9, 9]))).toBe('FT-22222222');
  });

  test('a typed reference is accepted in lower case, with spaces, or without the FT- prefix', () => {
    expect(parseSaleReference('  ft-ab23cd45 ')).toBe('FT-AB23CD45');
    expect(parseSaleReference('FTAB23CD45')).toBe('FT-AB23CD45');
    expect(parseSaleReference('ab23cd45')).toBe('FT-AB23CD45');
    expect(parseSaleReference('FTAB23CD')).toBe('FT-FTAB23CD');
  });

  test('a value with ambiguous characters, of another length, or a sale id (UUID) is not a reference', () => {
    expect(parseSaleReference('FT-AB23CD40')).toBeNull();
    expect(parseSaleReference('FT-AB23CDO5')).toBeNull();
    expect(parseSaleReference('FT-AB23CD4')).toBeNull();
    expect(parseSaleReference('FT-AB23CD456')).toBeNull();
    expect(parseSaleReference('019a5b5e-8f3c-7a21-9d4e-2b6c8e1f3a57')).toBeNull();
    expect(parseSaleReference('')).toBeNull();
  });

  test('the canonical check accepts only the exact written form', () => {
    expect(isSaleReference('FT-AB23CD45')).toBe(true);
    expect(isSaleReference('ft-AB23CD45')).toBe(false);
    expect(isSaleReference('AB23CD45')).toBe(false);
  });

  test('parsing a generated reference returns it unchanged', () => {
    fc.assert(
      fc.property(referenceBytes, (bytes) => {
        const reference = saleReferenceFromBytes(bytes);
        expect(parseSaleReference(reference)).toBe(reference);
        expect(parseSaleReference(reference.toLowerCase())).toBe(reference);
      }),
    );
  });
});

describe('ticket code', () => {
  test('a ticket code carries at least 128 random bits', () => {
    expect(TICKET_CODE_RANDOM_BYTES * 8).toBeGreaterThanOrEqual(128);
  });

  test('a ticket code is the unpadded base64url (URL-safe) of 18 random bytes', () => {
    fc.assert(
      fc.property(ticketBytes, (bytes) => {
        const code = ticketCodeFromBytes(bytes);
        expect(code).toBe(Buffer.from(bytes).toString('base64url'));
        expect(code).toHaveLength(TICKET_CODE_LENGTH);
        expect(encodeURIComponent(code)).toBe(code);
        expect(isTicketCode(code)).toBe(true);
      }),
    );
  });

  test('different bytes give different ticket codes', () => {
    fc.assert(
      fc.property(ticketBytes, ticketBytes, (a, b) => {
        fc.pre(!sameBytes(a, b));
        expect(ticketCodeFromBytes(a)).not.toBe(ticketCodeFromBytes(b));
      }),
    );
  });

  test('fewer than 18 random bytes is refused', () => {
    expect(() => ticketCodeFromBytes(new Uint8Array(16))).toThrow(RangeError);
  });

  test('the checker refuses padding, other characters and other lengths', () => {
    expect(isTicketCode('A'.repeat(24))).toBe(true);
    expect(isTicketCode(`${'A'.repeat(22)}==`)).toBe(false);
    expect(isTicketCode(`${'A'.repeat(23)}+`)).toBe(false);
    expect(isTicketCode('A'.repeat(23))).toBe(false);
    expect(isTicketCode('FT-AB23CD45')).toBe(false);
  });
});
