import { Migration } from '@mikro-orm/migrations';

export class Migration20261129021341_reconciler_walk_indexes extends Migration {
  override name = 'Migration20261129021341_reconciler_walk_indexes';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "membership_payments_closed_walk_index" on "membership_payments" ("updated_at", "id") where "status" <> 'OPEN' and "checkout_url" is not null;`,
    );
    this.addSql(
      `create index "membership_payments_refund_requested_index" on "membership_payments" ("updated_at", "id") where "status" = 'REFUND_REQUESTED';`,
    );

    this.addSql(`create index "sales_payment_ref_index" on "sales" ("payment_ref") where "payment_ref" is not null;`);
    this.addSql(
      `create index "sales_closed_unpaid_walk_index" on "sales" ("closed_at", "id") where "status" in ('ABANDONED', 'CANCELLED');`,
    );
    this.addSql(
      `create index "sales_confirmed_due_walk_index" on "sales" ((greatest("expires_at", "confirmed_at")), "id") where "status" = 'CONFIRMED';`,
    );
    this.addSql(
      `create index "sales_event_to_undo_index" on "sales" ("event_id") where "status" in ('PENDING', 'CONFIRMED');`,
    );

    this.addSql(
      `create index "payment_attempts_approved_walk_index" on "payment_attempts" ("created_at", "id") where "kind" in ('CARD', 'NOTIFICATION', 'STATUS_CHECK', 'LATE_PAYMENT') and "provider_payment_id" is not null and (("gateway" = 'GATEWAY_A' and "status" = 'approved') or ("gateway" = 'GATEWAY_B' and "status" in ('APPROVED', 'SALE_APPROVED')));`,
    );
    this.addSql(
      `create index "payment_attempts_refund_payment_index" on "payment_attempts" ("provider_payment_id", "status") where "kind" = 'REFUND';`,
    );
    this.addSql(
      `create index "payment_attempts_refund_done_index" on "payment_attempts" ("sale_id") where "kind" = 'REFUND' and "status" in ('refunded', 'VOIDED', 'VOID_APPROVED', 'FT_REFUNDED_OFFLINE');`,
    );
    this.addSql(
      `create index "payment_attempts_refund_open_index" on "payment_attempts" ("created_at") where "kind" = 'REFUND' and ("status" is null or "status" not in ('refunded', 'VOIDED', 'VOID_APPROVED', 'FT_REFUNDED_OFFLINE'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "membership_payments_closed_walk_index";`);
    this.addSql(`drop index "membership_payments_refund_requested_index";`);

    this.addSql(`drop index "payment_attempts_approved_walk_index";`);
    this.addSql(`drop index "payment_attempts_refund_payment_index";`);
    this.addSql(`drop index "payment_attempts_refund_done_index";`);
    this.addSql(`drop index "payment_attempts_refund_open_index";`);

    this.addSql(`drop index "sales_payment_ref_index";`);
    this.addSql(`drop index "sales_closed_unpaid_walk_index";`);
    this.addSql(`drop index "sales_confirmed_due_walk_index";`);
    this.addSql(`drop index "sales_event_to_undo_index";`);
  }
}
