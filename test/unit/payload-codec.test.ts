/**
 * The payload codec that encrypts buyer data in workflow histories (config/payload-codec.ts): AES-256-GCM with a
 * random IV per payload and the key id in the metadata, so keys rotate without re-encrypting old histories.
 */
import { randomBytes } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';
import { loadEnv } from '../../config/env.js';
import {
  ENCRYPTED_ENCODING,
  EncryptionCodec,
  KEY_ID_METADATA,
  PayloadCodecError,
  parsePayloadCodecKeys,
  temporalDataConverter,
} from '../../config/payload-codec.js';

const key1 = randomBytes(32);
const key2 = randomBytes(32);
const keys = (...entries: Array<[string, Buffer]>) =>
  entries.map(([id, key]) => `${id}:${key.toString('base64')}`).join(',');
const codecWith = (spec: string, active: string) =>
  EncryptionCodec.fromEnv({ PAYLOAD_CODEC_KEYS: spec, PAYLOAD_CODEC_ACTIVE_KEY: active });

const buyer = { name: 'Ana Cifrada', email: 'ana.cifrada@buyers.test', idNumber: '7788990011' };
const plain = (): Payload => defaultPayloadConverter.toPayload(buyer) as Payload;
const metadataText = (payload: Payload, key: string) => Buffer.from(payload.metadata?.[key] ?? []).toString('utf8');
const allBytes = (payload: Payload) =>
  Buffer.concat(
    [...Object.values(payload.metadata ?? {}), payload.data ?? new Uint8Array()].map((b) => Buffer.from(b)),
  );

describe('payload codec', () => {
  test('round trip: decode(encode(p)) gives back the same payload, metadata included', async () => {
    const codec = codecWith(keys(['k1', key1]), 'k1');
    const original = plain();
    const [encrypted] = await codec.encode([original]);
    const [decrypted] = await codec.decode([encrypted!]);
    expect(defaultPayloadConverter.fromPayload(decrypted!)).toEqual(buyer);
    expect(metadataText(decrypted!, 'encoding')).toBe('json/plain');
  });

  test('an encrypted payload says binary/encrypted and its key id, and shows none of the buyer data', async () => {
    const codec = codecWith(keys(['k1', key1]), 'k1');
    const [encrypted] = await codec.encode([plain()]);
    expect(metadataText(encrypted!, 'encoding')).toBe(ENCRYPTED_ENCODING);
    expect(metadataText(encrypted!, KEY_ID_METADATA)).toBe('k1');
    const bytes = allBytes(encrypted!).toString('latin1');
    for (const value of Object.values(buyer)) expect(bytes).not.toContain(value);
  });

  test('random IV: two encodes of the same payload differ', async () => {
    const codec = codecWith(keys(['k1', key1]), 'k1');
    const [a, b] = await codec.encode([plain(), plain()]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
    expect(Buffer.from(a!.data!).subarray(0, 12).equals(Buffer.from(b!.data!).subarray(0, 12))).toBe(false);
  });

  test('plain payloads (histories recorded before the codec) pass through decode unchanged', async () => {
    const codec = codecWith(keys(['k1', key1]), 'k1');
    const original = plain();
    const [decoded] = await codec.decode([original]);
    expect(decoded).toBe(original);
  });

  test('rotation: payloads of the retired key still decode while it stays listed; new ones use the active key', async () => {
    const before = codecWith(keys(['k1', key1]), 'k1');
    const [old] = await before.encode([plain()]);
    const after = codecWith(keys(['k1', key1], ['k2', key2]), 'k2');
    const [fresh] = await after.encode([plain()]);
    expect(metadataText(fresh!, KEY_ID_METADATA)).toBe('k2');
    const decoded = await after.decode([old!, fresh!]);
    expect(decoded.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([buyer, buyer]);
  });

  test('an unknown key id fails clearly, naming the id and the configured ids but no key bytes', async () => {
    const [encrypted] = await codecWith(keys(['k1', key1]), 'k1').encode([plain()]);
    const other = codecWith(keys(['k2', key2]), 'k2');
    const failure = other.decode([encrypted!]);
    await expect(failure).rejects.toBeInstanceOf(PayloadCodecError);
    await expect(failure).rejects.toThrow(/key "k1", which PAYLOAD_CODEC_KEYS does not list \(it lists k2\)/);
    await expect(failure).rejects.not.toThrow(key2.toString('base64'));
  });

  test('the wrong key under a known id fails authentication instead of returning garbage', async () => {
    const [encrypted] = await codecWith(keys(['k1', key1]), 'k1').encode([plain()]);
    const impostor = codecWith(keys(['k1', key2]), 'k1');
    await expect(impostor.decode([encrypted!])).rejects.toThrow(/failed authentication/);
  });

  test('a tampered ciphertext fails authentication (AES-GCM tag)', async () => {
    const codec = codecWith(keys(['k1', key1]), 'k1');
    const [encrypted] = await codec.encode([plain()]);
    const data = Buffer.from(encrypted!.data!);
    data[20] = (data[20] ?? 0) ^ 0x01;
    await expect(codec.decode([{ ...encrypted!, data }])).rejects.toThrow(/failed authentication/);
    const truncated = Buffer.from(encrypted!.data!).subarray(0, 20);
    await expect(codec.decode([{ ...encrypted!, data: truncated }])).rejects.toThrow(/too short/);
  });

  test('configuration is refused when malformed: short key, repeated id, active id not listed', () => {
    expect(() => parsePayloadCodecKeys(`k1:${randomBytes(16).toString('base64')}`)).toThrow(/must be 32 bytes/);
    expect(() => parsePayloadCodecKeys(keys(['k1', key1], ['k1', key2]))).toThrow(/twice/);
    expect(() => parsePayloadCodecKeys('')).toThrow(/no key/);
    expect(() => parsePayloadCodecKeys(key1.toString('base64'))).toThrow(/<id>:<base64 key>/);
    expect(() => codecWith(keys(['k1', key1]), 'k9')).toThrow(/PAYLOAD_CODEC_ACTIVE_KEY "k9"/);
    try {
      parsePayloadCodecKeys(`k1:${randomBytes(16).toString('base64')}`);
    } catch (error) {
      expect(String(error)).not.toMatch(/[A-Za-z0-9+/]{20,}/);
    }
  });

  test('the dev default configuration builds a working data converter (one codec for clients and workers)', async () => {
    const converter = temporalDataConverter(loadEnv({}));
    expect(converter.payloadCodecs).toHaveLength(1);
    const codec = converter.payloadCodecs![0]!;
    const [encrypted] = await codec.encode([plain()]);
    expect(defaultPayloadConverter.fromPayload((await codec.decode([encrypted!]))[0]!)).toEqual(buyer);
  });
});
