import { Migration } from '@mikro-orm/migrations';

export class Migration20261123013823_initial extends Migration {
  override name = 'Migration20261123013823_initial';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "idempotency_records" ("id" uuid not null, "scope" varchar(120) not null, "key" varchar(255) not null, "request_hash" varchar(64) not null, "state" text not null, "response_status" int null, "response_body" jsonb null, "created_at" timestamptz not null, "expires_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "idempotency_records_expires_at_index" on "idempotency_records" ("expires_at");`);
    this.addSql(
      `alter table "idempotency_records" add constraint "idempotency_records_scope_key_unique" unique ("scope", "key");`,
    );

    this.addSql(
      `create table "users" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(120) not null, "email" varchar(254) not null, "default_workspace_id" uuid null, primary key ("id"));`,
    );
    this.addSql(`alter table "users" add constraint "users_email_unique" unique ("email");`);

    this.addSql(
      `create table "workspaces" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(120) not null, "slug" varchar(80) not null, "currency" varchar(3) not null default 'COP', primary key ("id"));`,
    );
    this.addSql(`alter table "workspaces" add constraint "workspaces_slug_unique" unique ("slug");`);

    this.addSql(
      `create table "api_keys" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "user_id" uuid not null, "workspace_id" uuid not null, "name" varchar(120) not null, "scope" text not null, "secret_hash" varchar(64) not null, "preview" varchar(40) not null, "expires_at" timestamptz null, "revoked_at" timestamptz null, "last_used_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "api_keys_user_id_index" on "api_keys" ("user_id");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_secret_hash_unique" unique ("secret_hash");`);

    this.addSql(
      `create table "workspace_members" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "user_id" uuid not null, "role" text not null, "sections" jsonb null, "access_expires_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "workspace_members_user_id_index" on "workspace_members" ("user_id");`);
    this.addSql(
      `alter table "workspace_members" add constraint "workspace_members_workspace_id_user_id_unique" unique ("workspace_id", "user_id");`,
    );

    this.addSql(
      `alter table "idempotency_records" add constraint "idempotency_records_state_check" check ("state" in ('in_progress', 'completed'));`,
    );

    this.addSql(
      `alter table "api_keys" add constraint "api_keys_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "api_keys" add constraint "api_keys_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "api_keys" add constraint "api_keys_scope_check" check ("scope" in ('read', 'write'));`);

    this.addSql(
      `alter table "workspace_members" add constraint "workspace_members_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "workspace_members" add constraint "workspace_members_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "workspace_members" add constraint "workspace_members_role_check" check ("role" in ('VIEWER', 'STAFF', 'ADMIN', 'SUPER_ADMIN', 'MINCULTURA'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "api_keys" drop constraint "api_keys_user_id_foreign";`);
    this.addSql(`alter table "workspace_members" drop constraint "workspace_members_user_id_foreign";`);
    this.addSql(`alter table "api_keys" drop constraint "api_keys_workspace_id_foreign";`);
    this.addSql(`alter table "workspace_members" drop constraint "workspace_members_workspace_id_foreign";`);

    this.addSql(`drop table if exists "idempotency_records" cascade;`);
    this.addSql(`drop table if exists "users" cascade;`);
    this.addSql(`drop table if exists "workspaces" cascade;`);
    this.addSql(`drop table if exists "api_keys" cascade;`);
    this.addSql(`drop table if exists "workspace_members" cascade;`);
  }
}
