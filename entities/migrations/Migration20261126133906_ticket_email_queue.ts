import { Migration } from '@mikro-orm/migrations';

export class Migration20261126133906_ticket_email_queue extends Migration {
  override name = 'Migration20261126133906_ticket_email_queue';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "ticket_email_queue" ("sale_id" uuid not null, "queued_at" timestamptz not null, "next_attempt_at" timestamptz not null, "attempts" int not null default 0, "last_error" varchar(300) null, primary key ("sale_id"));`,
    );
    this.addSql(`create index "ticket_email_queue_next_attempt_at_index" on "ticket_email_queue" ("next_attempt_at");`);

    this.addSql(
      `alter table "ticket_email_queue" add constraint "ticket_email_queue_sale_id_foreign" foreign key ("sale_id") references "sales" ("id") on update cascade on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "ticket_email_queue" cascade;`);
  }
}
