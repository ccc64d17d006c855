/** Resend: emails one ticket's QR code to its buyer again (organizer or anonymous public request). */
import { proxyActivities } from '@temporalio/workflow';
import type { TicketOpsActivities } from '../activities/ticket-ops.js';

const mail = proxyActivities<TicketOpsActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 10 },
});

export async function ticketResend(input: { ticketId: string }): Promise<{ sent: boolean }> {
  return mail.emailTicket(input.ticketId);
}
