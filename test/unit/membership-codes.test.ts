import fc from 'fast-check';
import {
  isMembershipReference,
  isSaleReference,
  membershipReferenceFromBytes,
  parseSaleReference,
  SALE_REFERENCE_RANDOM_BYTES,
  saleReferenceFromBytes,
} from '../../domain/codes.js';

const referenceBytes = fc.uint8Array({
  minLength: SALE_REFERENCE_RANDOM_BYTES,
  maxLength: SALE_REFERENCE_RANDOM_BYTES,
});

describe('membership payment reference', () => {
  test('is MB- plus the same 8-character body a sale reference would have for the same bytes', () => {
    expect(membershipReferenceFromBytes(new Uint8Array([0, 0, 0, 0, 0]))).toBe('MB-22222222');
    expect(membershipReferenceFromBytes(new Uint8Array([0x08, 0x42, 0x10, 0x84, 0x21]))).toBe('MB-33333333');
    fc.assert(
      fc.property(referenceBytes, (bytes) => {
        const membership = membershipReferenceFromBytes(bytes);
        expect(membership.slice(3)).toBe(saleReferenceFromBytes(bytes).slice(3));
        expect(isMembershipReference(membership)).toBe(true);
        expect(membership.length).toBeLessThanOrEqual(16);
      }),
    );
  });

  test('a sale reference is never taken for a membership reference, nor the other way round', () => {
    fc.assert(
      fc.property(referenceBytes, (bytes) => {
        const membership = membershipReferenceFromBytes(bytes);
        expect(isSaleReference(membership)).toBe(false);
        expect(parseSaleReference(membership)).toBeNull();
        expect(parseSaleReference(membership.toLowerCase())).toBeNull();
        expect(isMembershipReference(saleReferenceFromBytes(bytes))).toBe(false);
      }),
    );
  });

  test('sale references still parse as before', () => {
    expect(parseSaleReference('ft-ab23cd45')).toBe('FT-AB23CD45');
    expect(parseSaleReference('ab23cd45')).toBe('FT-AB23CD45');
    expect(isMembershipReference('MB-AB23CD4O')).toBe(false);
    expect(isMembershipReference('mb-ab23cd45')).toBe(false);
  });

  test('needs 5 random bytes', () => {
    expect(() => membershipReferenceFromBytes(new Uint8Array(4))).toThrow(RangeError);
  });
});
