import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { TICKET_CODE_RANDOM_BYTES, ticketCodeFromBytes } from '../domain/codes.js';
import { escapeHtml } from '../domain/html.js';
import { formatMoney, isCurrencyCode } from '../domain/money.js';
import { newId } from '../entities/ids.js';
import { Event, EventDate, Sale, SaleItem, Ticket } from '../entities/index.js';
import type { ActivityDeps } from './deps.js';
import { ticketQrPng } from './ticket-qr.js';

/**
 * Issues the tickets of a confirmed sale inside the caller's transaction: one per unit, numbered by ordinal, so
 * running it twice cannot create a second ticket for the same unit (unique (sale_id, ordinal)).
 */
export async function issueTickets(em: EntityManager, saleId: string): Promise<number> {
  const sale = await em.findOneOrFail(Sale, { id: saleId }, { filters: { tenant: false } });
  const items = await em.find(SaleItem, { sale: saleId }, { orderBy: { id: 'asc' } });
  const rows: unknown[] = [];
  let ordinal = 0;
  for (const item of items) {
    for (let unit = 0; unit < item.quantity; unit += 1) {
      rows.push(
        newId(),
        sale.workspace,
        sale.id,
        item.ticketType,
        sale.event,
        sale.eventDate,
        ticketCodeFromBytes(randomBytes(TICKET_CODE_RANDOM_BYTES)),
        ordinal,
        item.seats?.[unit] ?? null,
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

export function createTicketActivities(deps: ActivityDeps) {
  return {
    /**
     * Emails the buyer one QR code per ticket, once per sale: a retry after the email went out sends nothing
     * (resending is the explicit POST /tickets/{code}/resend).
     */
    async emailTickets(saleId: string): Promise<{ sent: number }> {
      const em = deps.orm.em.fork();
      const sale = await em.findOneOrFail(Sale, { id: saleId }, { filters: { tenant: false } });
      if (sale.status !== 'CONFIRMED' || sale.ticketsEmailedAt) return { sent: 0 };
      const tickets = await em.find(
        Ticket,
        { sale: saleId },
        { filters: { tenant: false }, orderBy: { ordinal: 'asc' } },
      );
      const event = await em.findOneOrFail(
        Event,
        { id: sale.event },
        { filters: { tenant: false, notDeleted: false } },
      );
      const date = await em.findOneOrFail(
        EventDate,
        { id: sale.eventDate },
        { filters: { tenant: false, notDeleted: false } },
      );
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
        (ticket, index) =>
          `Ticket ${index + 1}${ticket.seatLabel ? ` (seat ${ticket.seatLabel})` : ''}: ${ticket.code}`,
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
      await em.execute('update sales set tickets_emailed_at = now() where id = ? and tickets_emailed_at is null', [
        saleId,
      ]);
      return { sent: tickets.length };
    },
  };
}

export type TicketActivities = ReturnType<typeof createTicketActivities>;
