import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { baseProperties, softDeleteFilter, tenantFilter } from './common.js';
import { Workspace } from './workspace.js';

/** Event names an endpoint can subscribe to (contract part 6). */
export const WEBHOOK_EVENTS = [
  'sale.confirmed',
  'sale.refunded',
  'membership.activated',
  'membership.renewed',
  'membership.cancelled',
  'membership.expired',
] as const;
export type WebhookEventName = (typeof WEBHOOK_EVENTS)[number];

/**
 * An organizer's webhook endpoint (contract 4.15). The signing secret is stored encrypted (AES-256-GCM, key from
 * SECRETS_ENCRYPTION_KEY), never in plaintext, and is shown once, in the creation response. `failureCount` counts
 * consecutive failed delivery attempts; reaching the configured limit sets `pausedAt` (no more deliveries until the
 * organizer re-activates the endpoint with PATCH { active: true }).
 */
export const Webhook = defineEntity({
  name: 'Webhook',
  tableName: 'webhooks',
  filters: { ...softDeleteFilter, ...tenantFilter },
  indexes: [{ properties: ['workspace', 'id'] }],
  properties: {
    ...baseProperties,
    workspace: () => p.manyToOne(Workspace).mapToPk().deleteRule('cascade'),
    url: p.string().length(2048),
    events: p.json<WebhookEventName[]>(),
    active: p.boolean().default(true),
    /** `v1:<iv>:<tag>:<ciphertext>`, base64url parts. */
    secretCiphertext: p.text(),
    /**
     * Set only when the endpoint was registered through an API running with WEBHOOK_ALLOW_PRIVATE_TARGETS (on-premise
     * receivers, tests). Not settable through the API; deliveries then skip the private-address rule for this row.
     */
    allowPrivateTargets: p.boolean().default(false),
    lastDeliveryAt: p.datetime().columnType('timestamptz').nullable(),
    lastDeliveryStatus: p.string().length(80).nullable(),
    failureCount: p.integer().default(0),
    pausedAt: p.datetime().columnType('timestamptz').nullable(),
    deletedAt: p.datetime().columnType('timestamptz').nullable(),
  },
});
export type IWebhook = InferEntity<typeof Webhook>;

function encryptionKey(material: string): Buffer {
  const key = /^[0-9a-f]{64}$/i.test(material) ? Buffer.from(material, 'hex') : Buffer.from(material, 'base64');
  if (key.length !== 32) throw new Error('SECRETS_ENCRYPTION_KEY must be 32 bytes, hex or base64');
  return key;
}

/** Encrypts a signing secret for storage: AES-256-GCM with a fresh 96-bit IV; the tag authenticates the ciphertext. */
export function encryptSecret(plaintext: string, keyMaterial: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', encryptionKey(keyMaterial), iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [
    'v1',
    iv.toString('base64url'),
    cipher.getAuthTag().toString('base64url'),
    ciphertext.toString('base64url'),
  ].join(':');
}

export function decryptSecret(stored: string, keyMaterial: string): string {
  const [version, iv, tag, ciphertext] = stored.split(':');
  if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('unknown secret format');
  const decipher = createDecipheriv('aes-256-gcm', encryptionKey(keyMaterial), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}

/** A generated signing secret: 256 random bits, prefixed so people recognise it. */
export const generateSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64url')}`;
