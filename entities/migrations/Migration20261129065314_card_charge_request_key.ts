import { Migration } from '@mikro-orm/migrations';

export class Migration20261129065314_card_charge_request_key extends Migration {
  override name = 'Migration20261129065314_card_charge_request_key';

  override up(): void | Promise<void> {
    this.addSql(`alter table "payment_attempts" add "request_key" varchar(200) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "payment_attempts" drop column "request_key";`);
  }
}
