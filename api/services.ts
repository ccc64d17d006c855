import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Redis } from 'ioredis';
import type { Env } from '../config/env.js';
import type { HostResolver } from '../domain/webhook-targets.js';
import type { GatewayAClient } from '../integrations/gateway-a/client.js';

/** What the HTTP layer needs from the outside world; built once by `api/main.ts` (or a test) and passed in. */
export interface ApiServices {
  env: Env;
  orm: MikroORM;
  redis: Redis;
  temporal: Client;
  /** Webhooks re-read gateway A payments to learn which sale a notification is about (never trusting its body). */
  gatewayA: Pick<GatewayAClient, 'getPayment'>;
  /** Name resolution for the webhook URL rules (4.15); the system resolver when unset. Tests inject their own. */
  resolveHost?: HostResolver;
}
