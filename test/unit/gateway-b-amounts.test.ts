import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  fromGatewayBAmount,
  GATEWAY_B_EXPONENTS,
  isGatewayBCurrency,
  toGatewayBAmount,
} from '../../integrations/gateway-b/amounts.js';

describe('gateway B amounts: our minor units ↔ the gateway’s unit per currency', () => {
  it('charges whole pesos for COP and cents for USD', () => {
    expect(GATEWAY_B_EXPONENTS).toEqual({ COP: 0, USD: 2 });
    expect(toGatewayBAmount(95_200, 'COP')).toBe(95_200);
    // US$ 52.37 is 5237 cents for the gateway, not 52 whole dollars.
    expect(toGatewayBAmount(5_237, 'USD')).toBe(5_237);
  });

  it('reads the gateway’s amounts back into minor units', () => {
    expect(fromGatewayBAmount(95_200, 'COP')).toBe(95_200);
    expect(fromGatewayBAmount(5_237, 'USD')).toBe(5_237);
  });

  it('round-trips every safe amount in both currencies', () => {
    fc.assert(
      fc.property(fc.constantFrom('COP', 'USD'), fc.nat({ max: 1e13 }), (currency, minor) => {
        expect(fromGatewayBAmount(toGatewayBAmount(minor, currency), currency)).toBe(minor);
      }),
    );
  });

  it('refuses currencies gateway B does not charge, both ways', () => {
    expect(isGatewayBCurrency('EUR')).toBe(false);
    expect(() => toGatewayBAmount(1_000, 'EUR')).toThrow(RangeError);
    expect(() => toGatewayBAmount(1_000, 'XXX')).toThrow(RangeError);
    expect(fromGatewayBAmount(1_000, 'EUR')).toBeNull();
  });

  it('never rounds a reported amount into a match', () => {
    expect(fromGatewayBAmount(52.37, 'USD')).toBeNull();
    expect(fromGatewayBAmount(-1, 'COP')).toBeNull();
    expect(fromGatewayBAmount(Number.MAX_SAFE_INTEGER + 1, 'COP')).toBeNull();
    expect(fromGatewayBAmount(Number.NaN, 'USD')).toBeNull();
  });

  it('refuses amounts that are not minor units', () => {
    expect(() => toGatewayBAmount(10.5, 'COP')).toThrow(RangeError);
    expect(() => toGatewayBAmount(-1, 'USD')).toThrow(RangeError);
  });
});
