import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { log as activityLogger, Context } from '@temporalio/activity';
import { TICKET_CODE_RANDOM_BYTES, ticketCodeFromBytes } from '../domain/codes.js';
import { escapeHtml } from '../domain/html.js';
import { formatMoney, isCurrencyCode } from '../domain/money.js';
import { newId } from '../entities/ids.js';
import { seatLabelsOf } from '../entities/sale.js';
import { isProviderError } from '../integrations/errors.js';
import type { ActivityDeps } from './deps.js';
import { appendSaleEvent } from './outbox.js';
import { ticketQrPng } from './ticket-qr.js';

/**
 * Issues the tickets of a confirmed sale inside the caller's transaction: one per unit, numbered by ordinal, so
 * running it twice cannot create a second ticket for the same unit (unique (sale_id, ordinal)).
 */
export async function issueTickets(em: EntityManager, saleId: string): Promise<number> {
  // The sale's items with what every ticket copies from the sale, in one round trip.
  const items = await em.execute<
    {
      workspace_id: string;
      event_id: string;
      event_date_id: string;
      ticket_type_id: string;
      quantity: number;
      seats: string[] | string | null;
    }[]
  >(
    `select s.workspace_id, s.event_id, s.event_date_id, i.ticket_type_id, i.quantity, i.seats
       from sale_items i join sales s on s.id = i.sale_id where i.sale_id = ? order by i.id`,
    [saleId],
  );
  const rows: unknown[] = [];
  let ordinal = 0;
  for (const item of items) {
    const seats = seatLabelsOf(item.seats);
    for (let unit = 0; unit < item.quantity; unit += 1) {
      rows.push(
        newId(),
        item.workspace_id,
        saleId,
        item.ticket_type_id,
        item.event_id,
        item.event_date_id,
        ticketCodeFromBytes(randomBytes(TICKET_CODE_RANDOM_BYTES)),
        ordinal,
        seats[unit] ?? null,
      );
      ordinal += 1;
    }
  }
  if (ordinal === 0) return 0;
  const placeholders = Array.from({ length: ordinal }, () => "(?, now(), now(), ?, ?, ?, ?, ?, ?, ?, 'VALID', ?)").join(
    ', ',
  );
  const inserted = await em.execute<{ id: string }[]>(
    `insert into tickets (id, created_at, updated_at, workspace_id, sale_id, ticket_type_id, event_id, event_date_id, code, ordinal, status, seat_label)
     values ${placeholders} on conflict (sale_id, ordinal) do nothing returning id`,
    rows,
  );
  return inserted.length;
}

/**
 * Everything a sale's confirmation writes beside its status, in the confirming transaction: its tickets, the
 * organizer's `sale.confirmed` event and, when the checkout hands its email to the ticket mailer, the owed email.
 * The reservation (free orders), the payment and the late payment confirm through here.
 */
export async function recordConfirmation(
  tx: EntityManager,
  saleId: string,
  options: { queueTicketEmail?: boolean | undefined },
): Promise<void> {
  await issueTickets(tx, saleId);
  await appendSaleEvent(tx, 'sale.confirmed', saleId);
  if (options.queueTicketEmail) await queueTicketEmail(tx, saleId);
}

interface TicketEmail {
  sale: {
    status: string;
    ticketsEmailedAt: string | null;
    reference: string;
    buyerName: string;
    buyerEmail: string;
    total: number;
    currency: string;
  };
  /** The event's name, also when the event was deleted since. */
  event: { name: string };
  date: { startsAt: Date; timezone: string };
  tickets: Array<{ code: string; seatLabel: string | null }>;
}

/** What a sale's ticket email says, in one round trip: the sale, its event and date, and its tickets in order. */
async function readTicketEmail(em: EntityManager, saleId: string): Promise<TicketEmail> {
  const rows = await em.execute<(Omit<TicketEmail, 'date'> & { startsAt: string; timezone: string })[]>(
    `select json_build_object('status', s.status, 'ticketsEmailedAt', s.tickets_emailed_at, 'reference', s.reference,
              'buyerName', s.buyer_name, 'buyerEmail', s.buyer_email, 'total', s.total, 'currency', s.currency) as sale,
            json_build_object('name', e.name) as event, d.starts_at as "startsAt", d.timezone,
            coalesce((select json_agg(json_build_object('code', t.code, 'seatLabel', t.seat_label) order by t.ordinal)
                        from tickets t where t.sale_id = s.id), '[]'::json) as tickets
       from sales s join events e on e.id = s.event_id join event_dates d on d.id = s.event_date_id
      where s.id = ?`,
    [saleId],
  );
  const row = rows[0];
  if (!row) throw new Error(`sale ${saleId} not found`);
  return { ...row, date: { startsAt: new Date(row.startsAt), timezone: row.timezone } };
}

/**
 * Emails the buyer one QR code per ticket of a CONFIRMED sale and stamps `tickets_emailed_at`, unless it was stamped
 * already: a sale not (or no longer) CONFIRMED, or already emailed, sends nothing. Sent before the stamp, so a crash
 * in between sends again rather than never (resending is the explicit POST /tickets/{code}/resend).
 */
async function sendTicketEmail(deps: ActivityDeps, em: EntityManager, saleId: string): Promise<{ sent: number }> {
  const { sale, event, date, tickets } = await readTicketEmail(em, saleId);
  if (sale.status !== 'CONFIRMED' || sale.ticketsEmailedAt) return { sent: 0 };
  const attachments = tickets.map((ticket, index) => ({
    filename: `ticket-${index + 1}.png`,
    content: ticketQrPng(ticket.code),
    contentType: 'image/png',
    cid: `ticket-${index + 1}`,
  }));
  const when = date.startsAt.toLocaleString('es-CO', {
    timeZone: date.timezone,
    dateStyle: 'full',
    timeStyle: 'short',
  });
  const total = isCurrencyCode(sale.currency)
    ? formatMoney(sale.total, sale.currency)
    : `${sale.total} ${sale.currency}`;
  const lines = tickets.map(
    (ticket, index) => `Ticket ${index + 1}${ticket.seatLabel ? ` (seat ${ticket.seatLabel})` : ''}: ${ticket.code}`,
  );
  await deps.providers.mail.send({
    to: sale.buyerEmail,
    subject: `Your tickets for ${event.name} — ${sale.reference}`,
    text: [
      `Hello ${sale.buyerName},`,
      '',
      `Purchase ${sale.reference} for ${event.name} on ${when} is confirmed (${total}).`,
      '',
      ...lines,
      '',
      'Show the QR code of each ticket at the door.',
    ].join('\n'),
    html: `<p>Hello ${escapeHtml(sale.buyerName)},</p><p>Purchase <b>${sale.reference}</b> for <b>${escapeHtml(event.name)}</b> on ${escapeHtml(when)} is confirmed (${escapeHtml(total)}).</p>${tickets
      .map(
        (ticket, index) =>
          `<p>Ticket ${index + 1}${ticket.seatLabel ? ` — seat ${escapeHtml(ticket.seatLabel)}` : ''}<br><img src="cid:ticket-${index + 1}" alt="QR ${index + 1}"><br><code>${ticket.code}</code></p>`,
      )
      .join('')}`,
    attachments,
  });
  await em.execute('update sales set tickets_emailed_at = now() where id = ? and tickets_emailed_at is null', [saleId]);
  return { sent: tickets.length };
}

/** Failed sends of a queued ticket email before it is given up (the buyer can still ask for a resend). */
export const TICKET_EMAIL_MAX_ATTEMPTS = 5;
const TICKET_EMAIL_FIRST_RETRY_MS = 5_000;
const TICKET_EMAIL_MAX_RETRY_MS = 2 * 60_000;
/** Sleep of the mailer's long poll between two looks at an empty queue. */
const MAILER_IDLE_POLL_MS = 250;
/** Emails one mailer sends at a time: a send mostly waits on the mail server. */
const MAILER_CONCURRENCY = 8;
/** How long a claimed email is the claiming mailer's; longer than a send's worst case (the SMTP timeouts). */
const TICKET_EMAIL_LEASE_MS = 2 * 60_000;

/**
 * Owes the buyer their tickets' email, inside the transaction that confirms the sale: the ticket mailer sends it. A
 * second insert for the same sale is a no-op.
 */
async function queueTicketEmail(em: EntityManager, saleId: string): Promise<void> {
  await em.execute(
    `insert into ticket_email_queue (sale_id, queued_at, next_attempt_at, attempts)
     values (?, now(), now(), 0) on conflict (sale_id) do nothing`,
    [saleId],
  );
}

/**
 * Claims up to `limit` due emails of the queue for a lease (skip locked: mailers never wait on each other, and never
 * claim the same email), so no transaction stays open while mail servers answer. An email whose mailer died is due
 * again when its lease ends.
 */
async function claimDueTicketEmails(
  deps: ActivityDeps,
  limit: number,
): Promise<Array<{ saleId: string; attempts: number }>> {
  const rows = await deps.orm.em.fork().execute<{ sale_id: string; attempts: number }[]>(
    `update ticket_email_queue set next_attempt_at = now() + (? * interval '1 millisecond')
      where sale_id in (select sale_id from ticket_email_queue where next_attempt_at <= now()
                         order by next_attempt_at limit ? for update skip locked)
      returning sale_id, attempts`,
    [TICKET_EMAIL_LEASE_MS, limit],
  );
  return rows.map((row) => ({ saleId: row.sale_id, attempts: row.attempts }));
}

/**
 * Sends one claimed email and dequeues it (the send stamps the sale first: a crash in between sends again rather
 * than never). A send that fails, for any reason, is tried again later with a doubling wait, so one bad email never
 * holds up the others.
 */
export async function mailClaimedTicketEmail(
  deps: ActivityDeps,
  claimed: { saleId: string; attempts: number },
): Promise<boolean> {
  try {
    await sendTicketEmail(deps, deps.orm.em.fork(), claimed.saleId);
  } catch (error) {
    await rescheduleTicketEmail(deps, { saleId: claimed.saleId, attempts: claimed.attempts + 1, error });
    return false;
  }
  await deps.orm.em.fork().execute('delete from ticket_email_queue where sale_id = ?', [claimed.saleId]);
  return true;
}

async function rescheduleTicketEmail(
  deps: ActivityDeps,
  failure: { saleId: string; attempts: number; error: unknown },
): Promise<void> {
  const em = deps.orm.em.fork();
  const reason = failure.error instanceof Error ? failure.error.message : String(failure.error);
  // A permanent refusal (a 5xx reply: no such mailbox…) is not tried again.
  const permanent = isProviderError(failure.error) && !failure.error.retryable;
  if (permanent || failure.attempts >= TICKET_EMAIL_MAX_ATTEMPTS) {
    await em.execute('delete from ticket_email_queue where sale_id = ?', [failure.saleId]);
    activityLogger.warn('the ticket email could not be sent; the buyer can ask for a resend', {
      saleId: failure.saleId,
      attempts: failure.attempts,
    });
    return;
  }
  const retryMs = Math.min(TICKET_EMAIL_FIRST_RETRY_MS * 2 ** (failure.attempts - 1), TICKET_EMAIL_MAX_RETRY_MS);
  await em.execute(
    `update ticket_email_queue set attempts = ?, next_attempt_at = now() + (? * interval '1 millisecond'),
       last_error = ? where sale_id = ?`,
    [failure.attempts, retryMs, reason.slice(0, 300), failure.saleId],
  );
}

export function createTicketActivities(deps: ActivityDeps) {
  return {
    /**
     * Emails the buyer one QR code per ticket, once per sale: a retry after the email went out sends nothing
     * (resending is the explicit POST /tickets/{code}/resend). Checkouts that hand the email to the ticket mailer
     * do not call it.
     */
    async emailTickets(saleId: string): Promise<{ sent: number }> {
      return sendTicketEmail(deps, deps.orm.em.fork(), saleId);
    },

    /**
     * The ticket mailer's long poll: sends queued ticket emails, oldest first, MAILER_CONCURRENCY at a time, until
     * `waitMs` has passed, heartbeating as it goes so a worker that dies hands the poll to another within the
     * heartbeat timeout (and the emails it had claimed are due again when their lease ends).
     */
    async mailQueuedTickets(input: { waitMs: number }): Promise<{ sent: number; failed: number }> {
      const context = Context.current();
      const deadline = Date.now() + input.waitMs;
      const counts = { sent: 0, failed: 0 };
      while (Date.now() < deadline) {
        context.heartbeat(counts);
        const claimed = await claimDueTicketEmails(deps, MAILER_CONCURRENCY);
        if (claimed.length === 0) {
          await context.sleep(Math.min(MAILER_IDLE_POLL_MS, Math.max(0, deadline - Date.now())));
          continue;
        }
        const sent = await Promise.all(claimed.map((email) => mailClaimedTicketEmail(deps, email)));
        for (const ok of sent) counts[ok ? 'sent' : 'failed'] += 1;
      }
      return counts;
    },
  };
}

export type TicketActivities = ReturnType<typeof createTicketActivities>;
