/**
 * The payload codec that keeps buyer personal data (names, emails, ID numbers, phones) out of Temporal histories in
 * clear: every payload a client or worker sends is encrypted with AES-256-GCM before it leaves the process, and
 * decrypted when it comes back. It runs in the worker's and the clients' main thread, never in the workflow sandbox,
 * so it may use node:crypto (nothing in workflows/ imports it).
 *
 * An encrypted payload is `{ metadata: { encoding: "binary/encrypted", "encryption-key-id": <id> },
 * data: iv (12 random bytes) ‖ ciphertext ‖ GCM tag (16 bytes) }`, where the ciphertext is the whole original
 * payload (metadata and data) serialized as a protobuf `Payload`. Keys rotate by id: new payloads use the active key,
 * decoding picks the key the payload names, and payloads without the encrypted encoding (histories recorded before
 * the codec existed) pass through decode unchanged.
 */
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { Env } from './env.js';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
const ENCODING_METADATA = 'encoding';
const ALGORITHM = 'aes-256-gcm';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64_PATTERN = /^[A-Za-z0-9+/]+={0,2}$/;

const ProtoPayload = proto.temporal.api.common.v1.Payload;

/** The settings the codec reads (config/env.ts documents them). */
export type PayloadCodecEnv = Pick<Env, 'PAYLOAD_CODEC_KEYS' | 'PAYLOAD_CODEC_ACTIVE_KEY'>;

/** A payload the codec cannot decrypt, or a key configuration it refuses. Messages name key ids, never key bytes. */
export class PayloadCodecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PayloadCodecError';
  }
}

/** `id1:base64key,id2:base64key` → id → 32-byte key. Throws on a malformed entry, a short key or a repeated id. */
export function parsePayloadCodecKeys(spec: string): Map<string, Buffer> {
  const keys = new Map<string, Buffer>();
  const entries = spec
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  entries.forEach((entry, index) => {
    const separator = entry.indexOf(':');
    const id = separator > 0 ? entry.slice(0, separator).trim() : '';
    if (!KEY_ID_PATTERN.test(id)) {
      throw new PayloadCodecError(
        `PAYLOAD_CODEC_KEYS entry ${index + 1} must be <id>:<base64 key> with an id of letters, digits, '.', '_' or '-'`,
      );
    }
    if (keys.has(id)) throw new PayloadCodecError(`PAYLOAD_CODEC_KEYS lists key "${id}" twice`);
    const encoded = entry.slice(separator + 1).trim();
    const key = Buffer.from(encoded, 'base64');
    if (!BASE64_PATTERN.test(encoded) || key.length !== KEY_BYTES) {
      throw new PayloadCodecError(`PAYLOAD_CODEC_KEYS key "${id}" must be ${KEY_BYTES} bytes, base64 encoded`);
    }
    keys.set(id, key);
  });
  if (keys.size === 0) throw new PayloadCodecError('PAYLOAD_CODEC_KEYS lists no key');
  return keys;
}

const text = (bytes: Uint8Array | null | undefined): string | undefined =>
  bytes ? Buffer.from(bytes).toString('utf8') : undefined;

/**
 * AES-256-GCM payload codec with key ids in the payload metadata, so keys can rotate without re-encrypting. Keys are
 * held as KeyObjects: given raw bytes, node:crypto builds a key object for every cipher, which made each payload's
 * encryption and decryption cost 1.6 to 2 times the CPU (`npm run bench -- payload-codec`).
 */
export class EncryptionCodec implements PayloadCodec {
  readonly #keys: ReadonlyMap<string, KeyObject>;
  readonly #activeKeyId: string;

  constructor(keys: ReadonlyMap<string, Uint8Array>, activeKeyId: string) {
    const copied = new Map<string, KeyObject>();
    for (const [id, key] of keys) {
      if (!KEY_ID_PATTERN.test(id)) throw new PayloadCodecError(`Invalid payload codec key id "${id.slice(0, 64)}"`);
      if (key.length !== KEY_BYTES) throw new PayloadCodecError(`Payload codec key "${id}" must be ${KEY_BYTES} bytes`);
      copied.set(id, createSecretKey(Buffer.from(key)));
    }
    if (!copied.has(activeKeyId)) {
      throw new PayloadCodecError(
        `PAYLOAD_CODEC_ACTIVE_KEY "${activeKeyId.slice(0, 64)}" is not one of the ids in PAYLOAD_CODEC_KEYS (${[...copied.keys()].join(', ')})`,
      );
    }
    this.#keys = copied;
    this.#activeKeyId = activeKeyId;
  }

  static fromEnv(env: PayloadCodecEnv): EncryptionCodec {
    return new EncryptionCodec(parsePayloadCodecKeys(env.PAYLOAD_CODEC_KEYS), env.PAYLOAD_CODEC_ACTIVE_KEY.trim());
  }

  /** The id new payloads are encrypted with. */
  get activeKeyId(): string {
    return this.#activeKeyId;
  }

  /** Whether a payload is one this codec (or another with the same format) encrypted. */
  static isEncrypted(payload: Payload): boolean {
    return text(payload.metadata?.[ENCODING_METADATA]) === ENCRYPTED_ENCODING;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encrypt(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => (EncryptionCodec.isEncrypted(payload) ? this.decrypt(payload) : payload));
  }

  private encrypt(payload: Payload): Payload {
    const key = this.#keys.get(this.#activeKeyId) as KeyObject;
    const plaintext = ProtoPayload.encode(payload).finish();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return {
      metadata: {
        [ENCODING_METADATA]: Buffer.from(ENCRYPTED_ENCODING),
        [KEY_ID_METADATA]: Buffer.from(this.#activeKeyId),
      },
      data: Buffer.concat([iv, ciphertext, cipher.getAuthTag()]),
    };
  }

  private decrypt(payload: Payload): Payload {
    const keyId = text(payload.metadata?.[KEY_ID_METADATA]);
    if (!keyId) throw new PayloadCodecError(`Encrypted payload carries no ${KEY_ID_METADATA} metadata`);
    const key = this.#keys.get(keyId);
    if (!key) {
      throw new PayloadCodecError(
        `Payload was encrypted with key "${keyId.slice(0, 64)}", which PAYLOAD_CODEC_KEYS does not list ` +
          `(it lists ${[...this.#keys.keys()].join(', ')}); keep every key a retained history still uses`,
      );
    }
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < IV_BYTES + TAG_BYTES) {
      throw new PayloadCodecError(`Encrypted payload (key "${keyId}") is too short to hold an IV and a tag`);
    }
    const decipher = createDecipheriv(ALGORITHM, key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plaintext: Buffer;
    try {
      plaintext = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new PayloadCodecError(
        `Payload encrypted with key "${keyId}" failed authentication: the ciphertext was altered, or key "${keyId}" ` +
          'is not the key that encrypted it',
      );
    }
    const decoded = ProtoPayload.decode(plaintext);
    return { metadata: decoded.metadata, data: decoded.data };
  }
}

/**
 * The data converter every Temporal client and worker of this service uses (API, worker, scripts, bench, tests), so
 * all of them read and write the same encrypted payloads. Pass the same value to a Client and to Worker.create.
 */
export function temporalDataConverter(env: PayloadCodecEnv): DataConverter {
  return { payloadCodecs: [EncryptionCodec.fromEnv(env)] };
}
