/**
 * Credentials the sandbox providers accept and sign with. Every value has a public dev default so the stack runs
 * with no .env file; the API/worker must be configured with the same values (see sandbox/README.md).
 */
export interface SandboxSecrets {
  gatewayA: {
    /** `Authorization: Bearer <accessToken>` on every server-side call. */
    accessToken: string;
    /** `?public_key=` on card tokenization (browser side). */
    publicKey: string;
    /** Key of the HMAC in `x-signature` on notifications. */
    webhookSecret: string;
    /** Currency of the sandbox merchant account (the gateway infers it from the account, not the request). */
    currency: string;
  };
  gatewayB: {
    /** Identity key: `Authorization: x-api-key <apiKey>` and the button's data-api-key. */
    apiKey: string;
    /** Secret key: integrity signatures and `x-bold-signature` on webhooks. */
    secretKey: string;
    merchantId: string;
  };
  seatmap: {
    /** HTTP Basic user name (empty password). */
    secretKey: string;
  };
}

export const DEV_SECRETS: SandboxSecrets = {
  gatewayA: {
    accessToken: 'TEST-4010000000000000-000000-sandbox-access-token-dev',
    publicKey: 'TEST-sandbox-public-key-dev',
    webhookSecret: 'dev-gateway-a-webhook-secret',
    currency: 'COP',
  },
  gatewayB: {
    apiKey: 'dev-gateway-b-api-key',
    secretKey: 'dev-gateway-b-secret-key',
    merchantId: 'SANDBOXMERCH',
  },
  seatmap: {
    secretKey: 'dev-seatmap-secret-key',
  },
};

export interface SandboxSecretsOverride {
  gatewayA?: Partial<SandboxSecrets['gatewayA']>;
  gatewayB?: Partial<SandboxSecrets['gatewayB']>;
  seatmap?: Partial<SandboxSecrets['seatmap']>;
}

export function resolveSecrets(override: SandboxSecretsOverride = {}): SandboxSecrets {
  return {
    gatewayA: { ...DEV_SECRETS.gatewayA, ...override.gatewayA },
    gatewayB: { ...DEV_SECRETS.gatewayB, ...override.gatewayB },
    seatmap: { ...DEV_SECRETS.seatmap, ...override.seatmap },
  };
}

/** Reads the secrets from the environment; unset variables keep their dev default (an empty value is kept). */
export function secretsFromEnv(env: NodeJS.ProcessEnv): SandboxSecrets {
  const pick = (name: string, fallback: string): string => env[name] ?? fallback;
  const d = DEV_SECRETS;
  return {
    gatewayA: {
      accessToken: pick('GATEWAY_A_ACCESS_TOKEN', d.gatewayA.accessToken),
      publicKey: pick('GATEWAY_A_PUBLIC_KEY', d.gatewayA.publicKey),
      webhookSecret: pick('GATEWAY_A_WEBHOOK_SECRET', d.gatewayA.webhookSecret),
      currency: pick('GATEWAY_A_CURRENCY', d.gatewayA.currency),
    },
    gatewayB: {
      apiKey: pick('GATEWAY_B_API_KEY', d.gatewayB.apiKey),
      secretKey: pick('GATEWAY_B_SECRET_KEY', d.gatewayB.secretKey),
      merchantId: pick('GATEWAY_B_MERCHANT_ID', d.gatewayB.merchantId),
    },
    seatmap: {
      secretKey: pick('SEATMAP_SECRET_KEY', d.seatmap.secretKey),
    },
  };
}
