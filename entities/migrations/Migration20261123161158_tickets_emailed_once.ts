import { Migration } from '@mikro-orm/migrations';

export class Migration20261123161158_tickets_emailed_once extends Migration {
  override name = 'Migration20261123161158_tickets_emailed_once';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sales" add "tickets_emailed_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sales" drop column "tickets_emailed_at";`);
  }
}
