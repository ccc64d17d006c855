import { Migration } from '@mikro-orm/migrations';

export class Migration20261129065643_refund_request_notify_buyer extends Migration {
  override name = 'Migration20261129065643_refund_request_notify_buyer';

  override up(): void | Promise<void> {
    this.addSql(`alter table "payment_attempts" add "notify_buyer" boolean null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "payment_attempts" drop column "notify_buyer";`);
  }
}
