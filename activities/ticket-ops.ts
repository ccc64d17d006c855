import { escapeHtml } from '../domain/html.js';
import { Event, EventDate, Sale, Ticket, TicketType } from '../entities/index.js';
import type { ActivityDeps } from './deps.js';
import { ticketQrPng } from './ticket-qr.js';

const ANY = { filters: { tenant: false, notDeleted: false } } as const;

export function createTicketOpsActivities(deps: ActivityDeps) {
  return {
    /**
     * Emails one ticket and its QR code to the sale's buyer again (POST /tickets/{code}/resend, organizer or public).
     * Only a ticket that would be admitted (VALID, sale CONFIRMED) is sent; anything else is skipped silently, so
     * the anonymous resend reveals nothing. Safe to retry: it only reads.
     */
    async emailTicket(ticketId: string): Promise<{ sent: boolean }> {
      const em = deps.orm.em.fork();
      const ticket = await em.findOne(Ticket, { id: ticketId }, ANY);
      if (ticket?.status !== 'VALID') return { sent: false };
      const sale = await em.findOneOrFail(Sale, { id: ticket.sale }, ANY);
      if (sale.status !== 'CONFIRMED') return { sent: false };
      const event = await em.findOneOrFail(Event, { id: ticket.eventId }, ANY);
      const date = await em.findOneOrFail(EventDate, { id: ticket.eventDateId }, ANY);
      const type = await em.findOne(TicketType, { id: ticket.ticketType }, ANY);
      const when = date.startsAt.toLocaleString('es-CO', {
        timeZone: date.timezone,
        dateStyle: 'full',
        timeStyle: 'short',
      });
      const qr = ticketQrPng(ticket.code);
      const label = `${type?.name ?? 'Ticket'}${ticket.seatLabel ? ` (seat ${ticket.seatLabel})` : ''}`;
      await deps.providers.mail.send({
        to: sale.buyerEmail,
        subject: `Your ticket for ${event.name} — ${sale.reference} (resent)`,
        text: [
          `Hello ${sale.buyerName},`,
          '',
          `Here is your ticket for ${event.name} on ${when} (purchase ${sale.reference}).`,
          '',
          `${label}: ${ticket.code}`,
          '',
          'Show the QR code at the door.',
        ].join('\n'),
        html: `<p>Hello ${escapeHtml(sale.buyerName)},</p><p>Here is your ticket for <b>${escapeHtml(event.name)}</b> on ${escapeHtml(when)} (purchase <b>${sale.reference}</b>).</p><p>${escapeHtml(label)}<br><img src="cid:ticket" alt="QR"><br><code>${ticket.code}</code></p>`,
        attachments: [{ filename: 'ticket.png', content: qr, contentType: 'image/png', cid: 'ticket' }],
      });
      return { sent: true };
    },

    /** Tells the buyer their purchase was refunded and its tickets no longer admit. */
    async emailRefundNotice(saleId: string): Promise<{ sent: boolean }> {
      const em = deps.orm.em.fork();
      const sale = await em.findOne(Sale, { id: saleId }, ANY);
      if (sale?.status !== 'REFUNDED') return { sent: false };
      const event = await em.findOneOrFail(Event, { id: sale.event }, ANY);
      await deps.providers.mail.send({
        to: sale.buyerEmail,
        subject: `Refund of ${sale.reference} — ${event.name}`,
        text: [
          `Hello ${sale.buyerName},`,
          '',
          `Purchase ${sale.reference} for ${event.name} was refunded in full. Its tickets are no longer valid.`,
          'The money goes back through the payment method you used; your bank may take a few days to show it.',
        ].join('\n'),
        html: `<p>Hello ${escapeHtml(sale.buyerName)},</p><p>Purchase <b>${sale.reference}</b> for <b>${escapeHtml(event.name)}</b> was refunded in full. Its tickets are no longer valid.</p><p>The money goes back through the payment method you used; your bank may take a few days to show it.</p>`,
      });
      return { sent: true };
    },
  };
}

export type TicketOpsActivities = ReturnType<typeof createTicketOpsActivities>;
