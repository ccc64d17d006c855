/**
 * The global switch of organizer webhook delivery (WEBHOOK_DELIVERY_ENABLED): while it is off the dispatcher leaves
 * the outbox alone — it neither reads nor marks events, so they all go out once delivery is switched back on.
 * The outbox is reached only through the ORM, so an ORM that records every use tells whether it was touched.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { Redis } from 'ioredis';
import type { Providers } from '../../activities/ports.js';
import { createWebhookActivities } from '../../activities/webhooks.js';
import { loadEnv } from '../../config/env.js';

const quiet: Logger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

function dispatcherWith(enabled: boolean) {
  const touches: string[] = [];
  const orm = {
    em: {
      fork: () => {
        touches.push('outbox');
        throw new Error('the outbox was read');
      },
    },
  } as unknown as MikroORM;
  const activities = createWebhookActivities({
    env: loadEnv({ ...process.env, WEBHOOK_DELIVERY_ENABLED: String(enabled) }),
    orm,
    redis: {} as Redis,
    providers: {} as Providers,
    temporal: {} as Client,
  });
  return { activities, touches };
}

describe('WEBHOOK_DELIVERY_ENABLED', () => {
  test('off: the dispatcher waits out its poll without reading or marking the outbox', async () => {
    const { activities, touches } = dispatcherWith(false);
    const result = await new MockActivityEnvironment(undefined, { logger: quiet }).run(activities.dispatchOutbox, {
      waitMs: 1_200,
    });
    expect(result).toEqual({ dispatched: 0 });
    expect(touches).toEqual([]);
  });

  test('on: the same poll reads the outbox', async () => {
    const { activities, touches } = dispatcherWith(true);
    await expect(
      new MockActivityEnvironment(undefined, { logger: quiet }).run(activities.dispatchOutbox, { waitMs: 1_200 }),
    ).rejects.toThrow('the outbox was read');
    expect(touches).toEqual(['outbox']);
  });
});
