import { Migration } from '@mikro-orm/migrations';

export class Migration20261126010546_lapsed_hold_index extends Migration {
  override name = 'Migration20261126010546_lapsed_hold_index';

  override up(): void | Promise<void> {
    this.addSql(`create index "sales_pending_expires_at_index" on "sales" ("expires_at") where "status" = 'PENDING';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "sales_pending_expires_at_index";`);
  }
}
