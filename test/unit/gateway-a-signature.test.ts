import { describe, expect, it } from '@jest/globals';
import {
  gatewayANotificationManifest,
  parseGatewayASignatureHeader,
  signGatewayANotification,
  verifyGatewayANotification,
} from '../../integrations/gateway-a/signature.js';

// Vectors computed independently with `openssl dgst -sha256 -hmac`.
const SECRET = 'test-webhook-secret';
const REQUEST_ID = 'bb56a2f1-6aae-46ac-982e-9dcd3581d08e';
const TS = '1704908010000';
const V1 = 'a24a3cb33dd0fd8cc3e9abb7cca6f16168037bd248fabf3b023c7da4aa8d0543';
const AT_SIGNING = new Date(1704908010000);

describe('gateway A notification signature', () => {
  it('builds the documented manifest id:…;request-id:…;ts:…; and leaves out absent parts', () => {
    expect(gatewayANotificationManifest({ dataId: '1300000001', xRequestId: REQUEST_ID, ts: TS })).toBe(
      `id:1300000001;request-id:${REQUEST_ID};ts:${TS};`,
    );
    expect(gatewayANotificationManifest({ dataId: '1300000001', ts: TS })).toBe(`id:1300000001;ts:${TS};`);
    expect(gatewayANotificationManifest({ dataId: 'ORD01ABC', ts: '1' })).toBe('id:ord01abc;ts:1;');
  });

  it('accepts the signature of a known vector', () => {
    expect(
      verifyGatewayANotification({
        xSignature: `ts=${TS},v1=${V1}`,
        xRequestId: REQUEST_ID,
        dataId: '1300000001',
        secret: SECRET,
      }),
    ).toBe(true);
  });

  it('lower-cases an alphanumeric data.id before checking, as the gateway signs it', () => {
    const header = `ts=1704908010,v1=3ac819bad25c320c75c0c3b0806ba85ce41198aa7c373a4fa3e589464768bdec`;
    expect(
      verifyGatewayANotification({ xSignature: header, xRequestId: 'req-1', dataId: 'ABC123XYZ', secret: SECRET }),
    ).toBe(true);
  });

  it('parses the header whatever the order and spacing of its parts', () => {
    expect(parseGatewayASignatureHeader(` v1=${V1} , ts=${TS}`)).toEqual({ ts: TS, v1: V1 });
    expect(parseGatewayASignatureHeader(`ts=${TS}`)).toBeNull();
    expect(parseGatewayASignatureHeader(undefined)).toBeNull();
  });

  it.each([
    ['another payment id', { dataId: '1300000002' }],
    ['another request id', { xRequestId: 'ffffffff-6aae-46ac-982e-9dcd3581d08e' }],
    ['another secret', { secret: 'other-secret' }],
    ['a forged timestamp', { xSignature: `ts=1704908099000,v1=${V1}` }],
    ['a truncated v1', { xSignature: `ts=${TS},v1=${V1.slice(0, 63)}` }],
    ['a non-hex v1', { xSignature: `ts=${TS},v1=${'z'.repeat(64)}` }],
    ['no header', { xSignature: undefined }],
    ['no data.id', { dataId: undefined }],
    ['an empty secret', { secret: '' }],
  ])('rejects a notification with %s', (_label, change) => {
    expect(
      verifyGatewayANotification({
        xSignature: `ts=${TS},v1=${V1}`,
        xRequestId: REQUEST_ID,
        dataId: '1300000001',
        secret: SECRET,
        ...change,
      }),
    ).toBe(false);
  });

  it('checks the age only when asked, reading ts in milliseconds or seconds', () => {
    const base = { xSignature: `ts=${TS},v1=${V1}`, xRequestId: REQUEST_ID, dataId: '1300000001', secret: SECRET };
    expect(
      verifyGatewayANotification({ ...base, maxAgeSeconds: 300, now: new Date(AT_SIGNING.getTime() + 60_000) }),
    ).toBe(true);
    expect(
      verifyGatewayANotification({ ...base, maxAgeSeconds: 300, now: new Date(AT_SIGNING.getTime() + 301_000) }),
    ).toBe(false);
    const inSeconds = signGatewayANotification({ dataId: '7', xRequestId: 'r', secret: SECRET, ts: '1704908010' });
    expect(
      verifyGatewayANotification({
        xSignature: inSeconds,
        xRequestId: 'r',
        dataId: '7',
        secret: SECRET,
        maxAgeSeconds: 300,
        now: AT_SIGNING,
      }),
    ).toBe(true);
  });

  it('signs what it verifies', () => {
    const header = signGatewayANotification({ dataId: '1300000001', xRequestId: REQUEST_ID, secret: SECRET, ts: TS });
    expect(header).toBe(`ts=${TS},v1=${V1}`);
  });
});
