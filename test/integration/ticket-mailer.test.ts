/**
 * The ticket mailer's rules for one claimed email, against the real database: sent and dequeued; a temporary refusal
 * tried again later with a doubling wait; given up after the last attempt or at once on a permanent refusal. The
 * queue rows here are due far in the future, so the stack's own mailer never claims them.
 */
import type { Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ActivityDeps } from '../../activities/deps.js';
import type { MailPort } from '../../activities/ports.js';
import { mailClaimedTicketEmail, TICKET_EMAIL_MAX_ATTEMPTS } from '../../activities/tickets.js';
import { ProviderError } from '../../integrations/errors.js';
import { createProviders } from '../../worker/providers.js';
import { createOrganizer, type Organizer } from '../support/fixtures.js';
import { publishEvent, untilTicketEmailSent } from '../support/purchase.js';
import { payByCard, reserve } from '../support/sales-ops.js';
import { startTestApi, type TestApi } from '../support/stack.js';

let api: TestApi;
let organizer: Organizer;
let providers: ReturnType<typeof createProviders>;
beforeAll(async () => {
  api = await startTestApi();
  organizer = await createOrganizer(api.orm.em.fork());
  providers = createProviders(api.env);
});
afterAll(async () => {
  providers.close();
  await api.close();
});

const quiet: Logger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/** One claimed email through the mailer's step, in an activity context as the worker runs it. */
const mailOnce = (deps: ActivityDeps, claimed: { saleId: string; attempts: number }): Promise<boolean> =>
  new MockActivityEnvironment(undefined, { logger: quiet }).run(mailClaimedTicketEmail, deps, claimed);

interface QueueRow {
  attempts: number;
  last_error: string | null;
  retry_in_ms: number;
}

const refusal = (status: number) =>
  new ProviderError({ provider: 'mail', status, retryable: status < 500, message: `mail: ${status} refused` });

function depsSending(mail: MailPort): ActivityDeps {
  return {
    env: api.env,
    orm: api.orm,
    redis: api.services.redis,
    temporal: api.services.temporal,
    providers: { ...providers, mail },
  };
}

/** A confirmed sale whose ticket email is owed again, in a queue row due in an hour (out of the stack mailer's way). */
async function owedEmail(attempts: number): Promise<string> {
  const event = await publishEvent(api, organizer);
  const { token, order } = await reserve(api, event, 'mailer');
  await payByCard(api, token, order.saleId);
  await untilTicketEmailSent(api, order.saleId);
  const em = api.orm.em.fork();
  await em.execute('update sales set tickets_emailed_at = null where id = ?', [order.saleId]);
  await em.execute(
    `insert into ticket_email_queue (sale_id, queued_at, next_attempt_at, attempts)
     values (?, now(), now() + interval '1 hour', ?)`,
    [order.saleId, attempts],
  );
  return order.saleId;
}

async function queueRow(saleId: string): Promise<QueueRow | null> {
  const rows = await api.orm.em.fork().execute<QueueRow[]>(
    `select attempts, last_error, (extract(epoch from next_attempt_at - now()) * 1000)::int as retry_in_ms
       from ticket_email_queue where sale_id = ?`,
    [saleId],
  );
  return rows[0] ?? null;
}

const emailedAt = async (saleId: string) =>
  (
    await api.orm.em
      .fork()
      .execute<{ tickets_emailed_at: Date | null }[]>('select tickets_emailed_at from sales where id = ?', [saleId])
  )[0]?.tickets_emailed_at ?? null;

test('a sent email stamps the sale and leaves the queue', async () => {
  const saleId = await owedEmail(0);
  const sent: string[] = [];
  const ok = await mailOnce(
    depsSending({
      send: async (message) => {
        sent.push(message.subject);
      },
    }),
    { saleId, attempts: 0 },
  );
  expect(ok).toBe(true);
  expect(sent).toHaveLength(1);
  expect(await queueRow(saleId)).toBeNull();
  expect(await emailedAt(saleId)).not.toBeNull();
});

test('a temporary refusal is tried again later, the wait doubling with each attempt', async () => {
  const saleId = await owedEmail(0);
  const refusing = depsSending({
    send: async () => {
      throw refusal(421);
    },
  });
  expect(await mailOnce(refusing, { saleId, attempts: 0 })).toBe(false);
  const first = await queueRow(saleId);
  expect(first).toMatchObject({ attempts: 1, last_error: 'mail: 421 refused' });
  expect(first?.retry_in_ms).toBeGreaterThan(3_000);
  expect(first?.retry_in_ms).toBeLessThanOrEqual(5_000);
  expect(await mailOnce(refusing, { saleId, attempts: 1 })).toBe(false);
  const second = await queueRow(saleId);
  expect(second?.attempts).toBe(2);
  expect(second?.retry_in_ms).toBeGreaterThan(8_000);
  expect(second?.retry_in_ms).toBeLessThanOrEqual(10_000);
  expect(await emailedAt(saleId)).toBeNull();
});

test(`given up after ${TICKET_EMAIL_MAX_ATTEMPTS} attempts, and at once on a permanent refusal`, async () => {
  const lastTry = await owedEmail(TICKET_EMAIL_MAX_ATTEMPTS - 1);
  const temporary = depsSending({
    send: async () => {
      throw refusal(421);
    },
  });
  expect(await mailOnce(temporary, { saleId: lastTry, attempts: TICKET_EMAIL_MAX_ATTEMPTS - 1 })).toBe(false);
  expect(await queueRow(lastTry)).toBeNull();

  const permanent = await owedEmail(0);
  const noMailbox = depsSending({
    send: async () => {
      throw refusal(550);
    },
  });
  expect(await mailOnce(noMailbox, { saleId: permanent, attempts: 0 })).toBe(false);
  expect(await queueRow(permanent)).toBeNull();
  expect(await emailedAt(permanent)).toBeNull();
});
