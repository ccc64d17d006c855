import { Migration } from '@mikro-orm/migrations';

export class Migration20261123023142_sales_ops extends Migration {
  override name = 'Migration20261123023142_sales_ops';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "webhooks" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "url" varchar(2048) not null, "events" jsonb not null, "active" boolean not null default true, "secret_ciphertext" text not null, "allow_private_targets" boolean not null default false, "last_delivery_at" timestamptz null, "last_delivery_status" varchar(80) null, "failure_count" int not null default 0, "paused_at" timestamptz null, "deleted_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "webhooks_workspace_id_id_index" on "webhooks" ("workspace_id", "id");`);

    this.addSql(
      `create table "outbox_events" ("id" uuid not null, "workspace_id" uuid not null, "type" varchar(60) not null, "payload" jsonb not null, "dedupe_key" varchar(200) not null, "created_at" timestamptz not null, "dispatched_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "outbox_events_workspace_id_index" on "outbox_events" ("workspace_id");`);
    this.addSql(`alter table "outbox_events" add constraint "outbox_events_dedupe_key_unique" unique ("dedupe_key");`);
    this.addSql(`create index "outbox_events_dispatched_at_id_index" on "outbox_events" ("dispatched_at", "id");`);

    this.addSql(
      `alter table "webhooks" add constraint "webhooks_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "outbox_events" add constraint "outbox_events_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "webhooks" cascade;`);
    this.addSql(`drop table if exists "outbox_events" cascade;`);
  }
}
