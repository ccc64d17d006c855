import { Migration } from '@mikro-orm/migrations';

export class Migration20261129135005_reconciler_paid_walk extends Migration {
  override name = 'Migration20261129135005_reconciler_paid_walk';

  override up(): void | Promise<void> {
    // The new walk index exists before the old one goes, so the gateway check never walks without one.
    this.addSql(
      `create index "sales_paid_due_walk_index" on "sales" ((greatest("expires_at", "confirmed_at")), "id") where "status" in ('CONFIRMED', 'REFUNDED');`,
    );
    this.addSql(`drop index "sales_confirmed_due_walk_index";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "sales_paid_due_walk_index";`);
    this.addSql(
      `create index "sales_confirmed_due_walk_index" on "sales" ((greatest("expires_at", "confirmed_at")), "id") where "status" = 'CONFIRMED';`,
    );
  }
}
