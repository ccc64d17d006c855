import { ApiKey } from './api-key.js';
import { Buyer, BuyerLoginCode, BuyerSession } from './buyer.js';
import { ContentLive, ContentPost, ContentVideo } from './content.js';
import { DeviceAuthorization } from './device-authorization.js';
import { Discount } from './discount.js';
import { Enterprise, EnterpriseTokenUse, EnterpriseWorkspace } from './enterprise.js';
import { Event } from './event.js';
import { EventDate } from './event-date.js';
import { IdempotencyRecord } from './idempotency-record.js';
import { MembershipPayment } from './membership-payment.js';
import { MembershipPlan } from './membership-plan.js';
import { MembershipSubscription } from './membership-subscription.js';
import { OrganizerLoginCode, OrganizerSignUp, OrganizerWebSession } from './organizer-account.js';
import { OutboxEvent } from './outbox-event.js';
import { PaymentAttempt } from './payment-attempt.js';
import { ReconcilerCursor } from './reconciler-cursor.js';
import { Sale, SaleItem, SaleStockAllocation } from './sale.js';
import { SalePaymentTotals } from './sale-payment-totals.js';
import { PayoutAccount, Settlement, SettlementAdjustment, SettlementFile, SettlementSale } from './settlement.js';
import { StaffInvitation } from './staff-invitation.js';
import { Ticket } from './ticket.js';
import { TicketEmail } from './ticket-email.js';
import { TicketStock } from './ticket-stock.js';
import { TicketType } from './ticket-type.js';
import { User } from './user.js';
import { Venue } from './venue.js';
import { Webhook } from './webhook.js';
import { Workspace } from './workspace.js';
import { WorkspaceMember } from './workspace-member.js';

export {
  ApiKey,
  Buyer,
  BuyerLoginCode,
  BuyerSession,
  ContentLive,
  ContentPost,
  ContentVideo,
  DeviceAuthorization,
  Discount,
  Enterprise,
  EnterpriseTokenUse,
  EnterpriseWorkspace,
  Event,
  EventDate,
  IdempotencyRecord,
  MembershipPayment,
  MembershipPlan,
  MembershipSubscription,
  OrganizerLoginCode,
  OrganizerSignUp,
  OrganizerWebSession,
  OutboxEvent,
  PaymentAttempt,
  PayoutAccount,
  ReconcilerCursor,
  Sale,
  SaleItem,
  SalePaymentTotals,
  SaleStockAllocation,
  Settlement,
  SettlementAdjustment,
  SettlementFile,
  SettlementSale,
  StaffInvitation,
  Ticket,
  TicketEmail,
  TicketStock,
  TicketType,
  User,
  Venue,
  Webhook,
  Workspace,
  WorkspaceMember,
};

/** Every entity the ORM knows; the migration generator diffs exactly this list against the database. */
export const ALL_ENTITIES = [
  Workspace,
  User,
  WorkspaceMember,
  ApiKey,
  IdempotencyRecord,
  Venue,
  Event,
  EventDate,
  TicketType,
  TicketStock,
  Discount,
  MembershipPlan,
  Buyer,
  BuyerLoginCode,
  BuyerSession,
  MembershipSubscription,
  Sale,
  SaleItem,
  SaleStockAllocation,
  Ticket,
  TicketEmail,
  PaymentAttempt,
  SalePaymentTotals,
  Webhook,
  OutboxEvent,
  MembershipPayment,
  PayoutAccount,
  Settlement,
  SettlementFile,
  SettlementSale,
  SettlementAdjustment,
  OrganizerSignUp,
  OrganizerLoginCode,
  OrganizerWebSession,
  StaffInvitation,
  DeviceAuthorization,
  Enterprise,
  EnterpriseWorkspace,
  EnterpriseTokenUse,
  ContentVideo,
  ContentPost,
  ContentLive,
  ReconcilerCursor,
];
