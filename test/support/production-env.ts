/**
 * Settings a production configuration needs to load: secrets that are not the sandbox's public dev values and real
 * provider URLs (production refuses both dev secrets and the sandbox's providers). The production-mode tests start
 * from these and take one away or change one.
 */
import { generateKeyPairSync } from 'node:crypto';

export const REAL_SECRETS: Record<string, string> = {
  SECRETS_ENCRYPTION_KEY: 'a1'.repeat(32),
  PAYLOAD_CODEC_KEYS: `prod-1:${Buffer.alloc(32, 7).toString('base64')}`,
  PAYLOAD_CODEC_ACTIVE_KEY: 'prod-1',
  GATEWAY_A_ACCESS_TOKEN: 'APP_USR-real-access-token',
  GATEWAY_A_WEBHOOK_SECRET: 'real-webhook-secret',
  GATEWAY_B_API_KEY: 'real-identity-key',
  GATEWAY_B_SECRET_KEY: 'real-secret-key',
  SEATMAP_SECRET_KEY: 'real-seatmap-key',
  // Signed playback has no public default: production needs the key the video provider issued.
  VIDEO_SIGNING_KEY_ID: 'provider-key-1',
  VIDEO_SIGNING_PRIVATE_KEY: generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString(),
  // Real providers: production refuses the sandbox's (test/unit/production-config.test.ts).
  GATEWAY_A_BASE_URL: 'https://api.gateway-a.example',
  GATEWAY_B_BASE_URL: 'https://api.gateway-b.example',
  SEATMAP_BASE_URL: 'https://api.seatmap.example',
  VIDEO_PLAYBACK_BASE_URL: 'https://stream.video.example',
  // Where the gateways and buyers reach the API: production refuses a loopback or plain-http origin.
  PUBLIC_ORIGIN: 'https://tickets.example.com',
};
