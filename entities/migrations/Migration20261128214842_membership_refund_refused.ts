import { Migration } from '@mikro-orm/migrations';

export class Migration20261128214842_membership_refund_refused extends Migration {
  override name = 'Migration20261128214842_membership_refund_refused';

  override up(): void | Promise<void> {
    this.addSql(`alter table "membership_payments" drop constraint "membership_payments_status_check";`);
    this.addSql(
      `alter table "membership_payments" add constraint "membership_payments_status_check" check ("status" in ('OPEN', 'APPROVED', 'REJECTED', 'EXPIRED', 'REFUND_REQUESTED', 'REFUNDED', 'REFUND_REFUSED'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "membership_payments" drop constraint "membership_payments_status_check";`);
    this.addSql(
      `alter table "membership_payments" add constraint "membership_payments_status_check" check ("status" in ('OPEN', 'APPROVED', 'REJECTED', 'EXPIRED', 'REFUND_REQUESTED', 'REFUNDED'));`,
    );
  }
}
