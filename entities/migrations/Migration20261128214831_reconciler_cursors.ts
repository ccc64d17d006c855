import { Migration } from '@mikro-orm/migrations';

export class Migration20261128214831_reconciler_cursors extends Migration {
  override name = 'Migration20261128214831_reconciler_cursors';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "reconciler_cursors" ("name" varchar(80) not null, "due_at" timestamptz not null, "item_id" uuid not null, "updated_at" timestamptz not null, primary key ("name"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "reconciler_cursors" cascade;`);
  }
}
