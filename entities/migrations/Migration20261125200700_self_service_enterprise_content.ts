import { Migration } from '@mikro-orm/migrations';

export class Migration20261125200700_self_service_enterprise_content extends Migration {
  override name = 'Migration20261125200700_self_service_enterprise_content';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "enterprises" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "name" varchar(120) not null, "secret_ciphertext" text not null, "return_url_hosts" jsonb not null, "disabled_at" timestamptz null, primary key ("id"));`,
    );

    this.addSql(
      `create table "enterprise_token_uses" ("id" uuid not null, "enterprise_id" uuid not null, "jti" varchar(255) not null, "expires_at" timestamptz not null, "used_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "enterprise_token_uses_enterprise_id_expires_at_index" on "enterprise_token_uses" ("enterprise_id", "expires_at");`,
    );
    this.addSql(
      `alter table "enterprise_token_uses" add constraint "enterprise_token_uses_enterprise_id_jti_unique" unique ("enterprise_id", "jti");`,
    );

    this.addSql(
      `create table "organizer_login_codes" ("id" uuid not null, "email" varchar(254) not null, "code_hash" varchar(64) not null, "attempts" int not null default 0, "expires_at" timestamptz not null, "used_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "organizer_login_codes_email_index" on "organizer_login_codes" ("email");`);

    this.addSql(
      `create table "organizer_sign_ups" ("id" uuid not null, "email" varchar(254) not null, "name" varchar(120) not null, "token_hash" varchar(64) not null, "expires_at" timestamptz not null, "verified_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "organizer_sign_ups_email_index" on "organizer_sign_ups" ("email");`);
    this.addSql(
      `alter table "organizer_sign_ups" add constraint "organizer_sign_ups_token_hash_unique" unique ("token_hash");`,
    );

    this.addSql(
      `create table "organizer_web_sessions" ("id" uuid not null, "user_id" uuid not null, "token_hash" varchar(64) not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "organizer_web_sessions_user_id_index" on "organizer_web_sessions" ("user_id");`);
    this.addSql(
      `alter table "organizer_web_sessions" add constraint "organizer_web_sessions_token_hash_unique" unique ("token_hash");`,
    );

    this.addSql(
      `create table "enterprise_workspaces" ("id" uuid not null, "enterprise_id" uuid not null, "workspace_id" uuid not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "enterprise_workspaces_workspace_id_index" on "enterprise_workspaces" ("workspace_id");`);
    this.addSql(
      `alter table "enterprise_workspaces" add constraint "enterprise_workspaces_enterprise_id_workspace_id_unique" unique ("enterprise_id", "workspace_id");`,
    );

    this.addSql(
      `create table "content_videos" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "title" varchar(200) not null, "description" text null, "provider_asset_id" varchar(200) not null, "members_only" boolean not null default false, "published_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `create index "content_videos_workspace_id_published_at_index" on "content_videos" ("workspace_id", "published_at");`,
    );
    this.addSql(
      `alter table "content_videos" add constraint "content_videos_workspace_id_provider_asset_id_unique" unique ("workspace_id", "provider_asset_id");`,
    );

    this.addSql(
      `create table "content_posts" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "kind" text not null, "title" varchar(200) null, "body" text not null, "author_type" text not null, "author_user_id" uuid null, "author_buyer_id" uuid null, "author_name" varchar(120) null, "published_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "content_posts_author_buyer_id_index" on "content_posts" ("author_buyer_id");`);
    this.addSql(
      `create index "content_posts_workspace_id_published_at_index" on "content_posts" ("workspace_id", "published_at");`,
    );

    this.addSql(
      `create table "content_lives" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "title" varchar(200) not null, "description" text null, "provider_stream_id" varchar(200) not null, "members_only" boolean not null default false, "scheduled_start_at" timestamptz not null, "status" text not null default 'scheduled', "started_at" timestamptz null, "ended_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `create index "content_lives_workspace_id_status_index" on "content_lives" ("workspace_id", "status");`,
    );
    this.addSql(
      `alter table "content_lives" add constraint "content_lives_workspace_id_provider_stream_id_unique" unique ("workspace_id", "provider_stream_id");`,
    );

    this.addSql(
      `create table "device_authorizations" ("id" uuid not null, "device_code_hash" varchar(64) not null, "user_code" varchar(8) not null, "client_id" varchar(64) not null, "scope" text not null, "status" text not null, "interval_seconds" int not null, "last_polled_at" timestamptz null, "expires_at" timestamptz not null, "user_id" uuid null, "workspace_id" uuid null, "decided_at" timestamptz null, "api_key_id" uuid null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "device_authorizations" add constraint "device_authorizations_device_code_hash_unique" unique ("device_code_hash");`,
    );
    this.addSql(
      `create unique index "device_authorizations_pending_user_code" on "device_authorizations" ("user_code") where status = 'pending';`,
    );

    this.addSql(`alter table "buyers" drop constraint "buyers_email_unique";`);
    this.addSql(`alter table "buyers" add "enterprise_id" uuid null, add "enterprise_subject" varchar(255) null;`);
    this.addSql(
      `alter table "buyers" add constraint "buyers_enterprise_id_foreign" foreign key ("enterprise_id") references "enterprises" ("id") on delete restrict;`,
    );
    this.addSql(
      `alter table "buyers" add constraint "buyers_enterprise_id_enterprise_subject_unique" unique ("enterprise_id", "enterprise_subject");`,
    );
    this.addSql(`create unique index "buyers_email_unique" on "buyers" ("email") where enterprise_id is null;`);

    this.addSql(
      `alter table "enterprise_token_uses" add constraint "enterprise_token_uses_enterprise_id_foreign" foreign key ("enterprise_id") references "enterprises" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "organizer_web_sessions" add constraint "organizer_web_sessions_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "enterprise_workspaces" add constraint "enterprise_workspaces_enterprise_id_foreign" foreign key ("enterprise_id") references "enterprises" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "enterprise_workspaces" add constraint "enterprise_workspaces_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "content_videos" add constraint "content_videos_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "content_posts" add constraint "content_posts_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "content_posts" add constraint "content_posts_author_user_id_foreign" foreign key ("author_user_id") references "users" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "content_posts" add constraint "content_posts_author_buyer_id_foreign" foreign key ("author_buyer_id") references "buyers" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "content_posts" add constraint "content_posts_kind_check" check ("kind" in ('post', 'article'));`,
    );
    this.addSql(
      `alter table "content_posts" add constraint "content_posts_author_type_check" check ("author_type" in ('organizer', 'member'));`,
    );

    this.addSql(
      `alter table "content_lives" add constraint "content_lives_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "content_lives" add constraint "content_lives_status_check" check ("status" in ('scheduled', 'live', 'ended'));`,
    );

    this.addSql(
      `alter table "device_authorizations" add constraint "device_authorizations_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "device_authorizations" add constraint "device_authorizations_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "device_authorizations" add constraint "device_authorizations_api_key_id_foreign" foreign key ("api_key_id") references "api_keys" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "device_authorizations" add constraint "device_authorizations_scope_check" check ("scope" in ('read', 'write'));`,
    );
    this.addSql(
      `alter table "device_authorizations" add constraint "device_authorizations_status_check" check ("status" in ('pending', 'approved', 'denied', 'consumed', 'expired'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "buyers" drop constraint "buyers_enterprise_id_foreign";`);
    this.addSql(`alter table "enterprise_token_uses" drop constraint "enterprise_token_uses_enterprise_id_foreign";`);
    this.addSql(`alter table "enterprise_workspaces" drop constraint "enterprise_workspaces_enterprise_id_foreign";`);

    this.addSql(`drop table if exists "enterprises" cascade;`);
    this.addSql(`drop table if exists "enterprise_token_uses" cascade;`);
    this.addSql(`drop table if exists "organizer_login_codes" cascade;`);
    this.addSql(`drop table if exists "organizer_sign_ups" cascade;`);
    this.addSql(`drop table if exists "organizer_web_sessions" cascade;`);
    this.addSql(`drop table if exists "enterprise_workspaces" cascade;`);
    this.addSql(`drop table if exists "content_videos" cascade;`);
    this.addSql(`drop table if exists "content_posts" cascade;`);
    this.addSql(`drop table if exists "content_lives" cascade;`);
    this.addSql(`drop table if exists "device_authorizations" cascade;`);

    this.addSql(`drop index "buyers_email_unique";`);
    this.addSql(`alter table "buyers" drop constraint "buyers_enterprise_id_enterprise_subject_unique";`);
    this.addSql(`alter table "buyers" drop column "enterprise_id", drop column "enterprise_subject";`);
    this.addSql(`alter table "buyers" add constraint "buyers_email_unique" unique ("email");`);
  }
}
