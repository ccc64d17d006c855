import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Redis } from 'ioredis';
import type { Env } from '../config/env.js';
import type { HostResolver } from '../domain/webhook-targets.js';
import type { Providers } from './ports.js';

/** Clients injected into every activity by the worker (tests inject the same real ones). */
export interface ActivityDeps {
  env: Env;
  orm: MikroORM;
  redis: Redis;
  providers: Providers;
  /**
   * Temporal client for activities that talk to other executions: the organizer's cancel goes through the sale's
   * checkout workflow (update `release`), and the webhook dispatcher starts one delivery workflow per endpoint.
   */
  temporal: Client;
  /** Name resolution for webhook deliveries (SSRF rule against the resolved address); the system resolver if unset. */
  resolveHost?: HostResolver;
}
