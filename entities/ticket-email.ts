import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Sale } from './sale.js';

/**
 * Ticket emails waiting to go out. A checkout that hands its email to the ticket mailer (workflows/ticket-mailer.ts)
 * inserts the row in the transaction that confirms the sale, so a confirmed sale always has its email owed; the mailer
 * sends it, stamps `sales.tickets_emailed_at` and deletes the row. `nextAttemptAt` is when the email is due: the end of
 * a mailer's claim on it while one sends it, and after a failed send, when it is tried again.
 */
export const TicketEmail = defineEntity({
  name: 'TicketEmail',
  tableName: 'ticket_email_queue',
  indexes: [{ properties: ['nextAttemptAt'] }],
  properties: {
    sale: () => p.oneToOne(Sale).primary().mapToPk().owner().deleteRule('cascade'),
    queuedAt: p.datetime().columnType('timestamptz'),
    nextAttemptAt: p.datetime().columnType('timestamptz'),
    attempts: p.integer().default(0),
    lastError: p.string().length(300).nullable(),
  },
});
export type ITicketEmail = InferEntity<typeof TicketEmail>;
