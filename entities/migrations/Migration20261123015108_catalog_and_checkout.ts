import { Migration } from '@mikro-orm/migrations';

export class Migration20261123015108_catalog_and_checkout extends Migration {
  override name = 'Migration20261123015108_catalog_and_checkout';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "buyers" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "email" varchar(254) not null, "name" varchar(120) null, "phone" varchar(40) null, primary key ("id"));`,
    );
    this.addSql(`alter table "buyers" add constraint "buyers_email_unique" unique ("email");`);

    this.addSql(
      `create table "buyer_login_codes" ("id" uuid not null, "email" varchar(254) not null, "code_hash" varchar(64) not null, "attempts" int not null default 0, "expires_at" timestamptz not null, "used_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "buyer_login_codes_email_index" on "buyer_login_codes" ("email");`);

    this.addSql(
      `create table "buyer_sessions" ("id" uuid not null, "buyer_id" uuid not null, "token_hash" varchar(64) not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "buyer_sessions_buyer_id_index" on "buyer_sessions" ("buyer_id");`);
    this.addSql(
      `alter table "buyer_sessions" add constraint "buyer_sessions_token_hash_unique" unique ("token_hash");`,
    );

    this.addSql(
      `create table "venues" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "name" varchar(160) not null, "address" varchar(300) null, "city" varchar(120) null, "country" varchar(2) not null default 'CO', "timezone" varchar(64) not null default 'America/Bogota', "capacity" int null, "deleted_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "venues_workspace_id_index" on "venues" ("workspace_id");`);

    this.addSql(
      `create table "membership_plans" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "name" varchar(160) not null, "description" text null, "price" int not null, "currency" varchar(3) not null, "period" text not null, "benefits" jsonb not null, "active" boolean not null default true, "deleted_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "membership_plans_workspace_id_index" on "membership_plans" ("workspace_id");`);

    this.addSql(
      `create table "membership_subscriptions" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "plan_id" uuid not null, "buyer_id" uuid not null, "status" text not null, "current_period_end" timestamptz null, "cancelled_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "membership_subscriptions_plan_id_index" on "membership_subscriptions" ("plan_id");`);
    this.addSql(
      `create index "membership_subscriptions_workspace_id_buyer_id_index" on "membership_subscriptions" ("workspace_id", "buyer_id");`,
    );

    this.addSql(
      `create table "events" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "venue_id" uuid null, "name" varchar(200) not null, "slug" varchar(120) not null, "description" text null, "image_url" varchar(2048) null, "status" text not null default 'DRAFT', "sales_mode" text not null default 'INTERNAL', "external_sales_url" varchar(2048) null, "gateway_bonly" boolean not null default false, "published_at" timestamptz null, "cancelled_at" timestamptz null, "deleted_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "events" add constraint "events_slug_unique" unique ("slug");`);
    this.addSql(`create index "events_workspace_id_id_index" on "events" ("workspace_id", "id");`);

    this.addSql(
      `create table "event_dates" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "event_id" uuid not null, "label" varchar(160) null, "starts_at" timestamptz not null, "ends_at" timestamptz null, "timezone" varchar(64) not null default 'America/Bogota', "sales_start_at" timestamptz null, "sales_end_at" timestamptz null, "payment_window_minutes" int not null default 30, "virtual_queue" boolean not null default false, "queue_admissions_per_minute" int not null default 60, "seat_map_chart_key" varchar(120) null, "seat_map_event_key" varchar(120) null, "cancelled_at" timestamptz null, "deleted_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "event_dates_event_id_index" on "event_dates" ("event_id");`);

    this.addSql(
      `create table "ticket_types" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "event_id" uuid not null, "event_date_id" uuid not null, "name" varchar(160) not null, "description" text null, "price" int not null, "currency" varchar(3) not null, "capacity" int not null, "max_per_order" int not null default 10, "members_only" boolean not null default false, "presale_starts_at" timestamptz null, "presale_ends_at" timestamptz null, "seat_map_category_key" varchar(120) null, "fee_absorbed_by_organizer" boolean not null default false, "service_fee_bps" int null, "service_fee_fixed" int null, "seating_surcharge" int not null default 0, "sort_order" int not null default 0, "deleted_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "ticket_types_event_date_id_index" on "ticket_types" ("event_date_id");`);

    this.addSql(
      `create table "ticket_stock" ("ticket_type_id" uuid not null, "shard" smallint not null, "available" int not null, primary key ("ticket_type_id", "shard"));`,
    );

    this.addSql(
      `create table "discounts" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "code" varchar(40) not null, "type" text not null, "value" int not null, "event_id" uuid null, "active" boolean not null default true, "max_uses" int null, "uses" int not null default 0, "starts_at" timestamptz null, "ends_at" timestamptz null, "deleted_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "discounts_workspace_id_code_index" on "discounts" ("workspace_id", "code");`);

    this.addSql(
      `create table "sales" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "reference" varchar(16) not null, "status" text not null, "channel" text not null default 'WEB', "origin" text not null, "event_id" uuid not null, "event_date_id" uuid not null, "buyer_id" uuid null, "buyer_name" varchar(120) not null, "buyer_email" varchar(254) not null, "buyer_phone" varchar(40) null, "buyer_document_type" varchar(8) null, "buyer_document_number" varchar(20) null, "buyer_nit_digit" varchar(1) null, "subtotal" int not null, "discount_amount" int not null, "service_fee" int not null, "iva" int not null, "total" int not null, "organizer_service_fee" int not null default 0, "currency" varchar(3) not null, "discount_id" uuid null, "payment_provider" text null, "payment_ref" varchar(120) null, "payment_status" varchar(60) null, "decline_code" varchar(80) null, "failure_reason" varchar(300) null, "return_url" varchar(2048) null, "hold_token" varchar(120) null, "expires_at" timestamptz null, "confirmed_at" timestamptz null, "closed_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "sales" add constraint "sales_reference_unique" unique ("reference");`);
    this.addSql(`create index "sales_workspace_id_id_index" on "sales" ("workspace_id", "id");`);
    this.addSql(`create index "sales_workspace_id_status_id_index" on "sales" ("workspace_id", "status", "id");`);
    this.addSql(
      `create index "sales_workspace_id_event_date_id_id_index" on "sales" ("workspace_id", "event_date_id", "id");`,
    );
    this.addSql(`create index "sales_workspace_id_created_at_index" on "sales" ("workspace_id", "created_at");`);
    this.addSql(
      `create index "sales_buyer_id_event_date_id_status_index" on "sales" ("buyer_id", "event_date_id", "status");`,
    );

    this.addSql(
      `create table "tickets" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "sale_id" uuid not null, "ticket_type_id" uuid not null, "event_id" uuid not null, "event_date_id" uuid not null, "code" varchar(40) not null, "ordinal" int not null, "status" text not null, "seat_label" varchar(120) null, "checked_in_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "tickets_sale_id_index" on "tickets" ("sale_id");`);
    this.addSql(`create index "tickets_ticket_type_id_index" on "tickets" ("ticket_type_id");`);
    this.addSql(`alter table "tickets" add constraint "tickets_code_unique" unique ("code");`);
    this.addSql(`alter table "tickets" add constraint "tickets_sale_id_ordinal_unique" unique ("sale_id", "ordinal");`);

    this.addSql(
      `create table "sale_stock_allocations" ("sale_id" uuid not null, "ticket_type_id" uuid not null, "shard" smallint not null, "quantity" int not null, primary key ("sale_id", "ticket_type_id", "shard"));`,
    );
    this.addSql(
      `create index "sale_stock_allocations_ticket_type_id_index" on "sale_stock_allocations" ("ticket_type_id");`,
    );

    this.addSql(
      `create table "sale_items" ("id" uuid not null, "sale_id" uuid not null, "ticket_type_id" uuid not null, "ticket_type_name" varchar(160) not null, "quantity" int not null, "unit_price" int not null, "unit_service_fee" int not null, "unit_iva" int not null, "seats" jsonb null, primary key ("id"));`,
    );
    this.addSql(`create index "sale_items_sale_id_index" on "sale_items" ("sale_id");`);

    this.addSql(
      `create table "payment_attempts" ("id" uuid not null, "sale_id" uuid not null, "gateway" text not null, "kind" text not null, "provider_payment_id" varchar(120) null, "status" varchar(60) null, "status_detail" varchar(120) null, "amount" int null, "dedupe_key" varchar(200) null, "note" varchar(300) null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "payment_attempts_sale_id_index" on "payment_attempts" ("sale_id");`);
    this.addSql(
      `alter table "payment_attempts" add constraint "payment_attempts_dedupe_key_unique" unique ("dedupe_key");`,
    );

    this.addSql(
      `alter table "workspaces" add "service_fee_bps" int not null default 1000, add "service_fee_fixed" int not null default 0, add "plan" text not null default 'STANDARD', add "gateway_ballowlisted" boolean not null default false, add "requires_purchase_session" boolean not null default false;`,
    );
    this.addSql(
      `alter table "workspaces" add constraint "workspaces_plan_check" check ("plan" in ('STANDARD', 'LEGEND'));`,
    );

    this.addSql(
      `alter table "buyer_sessions" add constraint "buyer_sessions_buyer_id_foreign" foreign key ("buyer_id") references "buyers" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "venues" add constraint "venues_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "membership_plans" add constraint "membership_plans_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "membership_plans" add constraint "membership_plans_period_check" check ("period" in ('MONTHLY', 'QUARTERLY', 'YEARLY'));`,
    );

    this.addSql(
      `alter table "membership_subscriptions" add constraint "membership_subscriptions_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "membership_subscriptions" add constraint "membership_subscriptions_plan_id_foreign" foreign key ("plan_id") references "membership_plans" ("id");`,
    );
    this.addSql(
      `alter table "membership_subscriptions" add constraint "membership_subscriptions_buyer_id_foreign" foreign key ("buyer_id") references "buyers" ("id");`,
    );
    this.addSql(
      `alter table "membership_subscriptions" add constraint "membership_subscriptions_status_check" check ("status" in ('PENDING', 'ACTIVE', 'CANCELLED', 'EXPIRED'));`,
    );

    this.addSql(
      `alter table "events" add constraint "events_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "events" add constraint "events_venue_id_foreign" foreign key ("venue_id") references "venues" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "events" add constraint "events_status_check" check ("status" in ('DRAFT', 'PUBLISHED', 'CANCELLED'));`,
    );
    this.addSql(
      `alter table "events" add constraint "events_sales_mode_check" check ("sales_mode" in ('INTERNAL', 'EXTERNAL'));`,
    );

    this.addSql(
      `alter table "event_dates" add constraint "event_dates_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "event_dates" add constraint "event_dates_event_id_foreign" foreign key ("event_id") references "events" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "ticket_types" add constraint "ticket_types_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "ticket_types" add constraint "ticket_types_event_id_foreign" foreign key ("event_id") references "events" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "ticket_types" add constraint "ticket_types_event_date_id_foreign" foreign key ("event_date_id") references "event_dates" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "ticket_stock" add constraint "ticket_stock_ticket_type_id_foreign" foreign key ("ticket_type_id") references "ticket_types" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "ticket_stock" add constraint "ticket_stock_available_non_negative" check (available >= 0);`,
    );

    this.addSql(
      `alter table "discounts" add constraint "discounts_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "discounts" add constraint "discounts_event_id_foreign" foreign key ("event_id") references "events" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "discounts" add constraint "discounts_uses_within_max" check (max_uses is null or uses <= max_uses);`,
    );
    this.addSql(
      `alter table "discounts" add constraint "discounts_type_check" check ("type" in ('PERCENT', 'FIXED'));`,
    );

    this.addSql(
      `alter table "sales" add constraint "sales_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "sales" add constraint "sales_event_id_foreign" foreign key ("event_id") references "events" ("id");`,
    );
    this.addSql(
      `alter table "sales" add constraint "sales_event_date_id_foreign" foreign key ("event_date_id") references "event_dates" ("id");`,
    );
    this.addSql(
      `alter table "sales" add constraint "sales_buyer_id_foreign" foreign key ("buyer_id") references "buyers" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "sales" add constraint "sales_discount_id_foreign" foreign key ("discount_id") references "discounts" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "sales" add constraint "sales_status_check" check ("status" in ('PENDING', 'CONFIRMED', 'ABANDONED', 'CANCELLED', 'REFUNDED'));`,
    );
    this.addSql(
      `alter table "sales" add constraint "sales_channel_check" check ("channel" in ('WEB', 'MOBILE', 'POS', 'ADMIN'));`,
    );
    this.addSql(
      `alter table "sales" add constraint "sales_origin_check" check ("origin" in ('CUSTOMER', 'PUBLIC', 'ORGANIZER'));`,
    );
    this.addSql(
      `alter table "sales" add constraint "sales_payment_provider_check" check ("payment_provider" in ('GATEWAY_A', 'GATEWAY_B'));`,
    );

    this.addSql(
      `alter table "tickets" add constraint "tickets_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "tickets" add constraint "tickets_sale_id_foreign" foreign key ("sale_id") references "sales" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "tickets" add constraint "tickets_ticket_type_id_foreign" foreign key ("ticket_type_id") references "ticket_types" ("id");`,
    );
    this.addSql(
      `alter table "tickets" add constraint "tickets_status_check" check ("status" in ('VALID', 'USED', 'INVALID'));`,
    );

    this.addSql(
      `alter table "sale_stock_allocations" add constraint "sale_stock_allocations_sale_id_foreign" foreign key ("sale_id") references "sales" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "sale_stock_allocations" add constraint "sale_stock_allocations_ticket_type_id_foreign" foreign key ("ticket_type_id") references "ticket_types" ("id");`,
    );

    this.addSql(
      `alter table "sale_items" add constraint "sale_items_sale_id_foreign" foreign key ("sale_id") references "sales" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "sale_items" add constraint "sale_items_ticket_type_id_foreign" foreign key ("ticket_type_id") references "ticket_types" ("id");`,
    );

    this.addSql(
      `alter table "payment_attempts" add constraint "payment_attempts_sale_id_foreign" foreign key ("sale_id") references "sales" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "payment_attempts" add constraint "payment_attempts_gateway_check" check ("gateway" in ('GATEWAY_A', 'GATEWAY_B'));`,
    );
    this.addSql(
      `alter table "payment_attempts" add constraint "payment_attempts_kind_check" check ("kind" in ('OPEN', 'CARD', 'PSE', 'NOTIFICATION', 'STATUS_CHECK', 'REFUND', 'LATE_PAYMENT'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "buyer_sessions" drop constraint "buyer_sessions_buyer_id_foreign";`);
    this.addSql(`alter table "membership_subscriptions" drop constraint "membership_subscriptions_buyer_id_foreign";`);
    this.addSql(`alter table "sales" drop constraint "sales_buyer_id_foreign";`);
    this.addSql(`alter table "events" drop constraint "events_venue_id_foreign";`);
    this.addSql(`alter table "membership_subscriptions" drop constraint "membership_subscriptions_plan_id_foreign";`);
    this.addSql(`alter table "event_dates" drop constraint "event_dates_event_id_foreign";`);
    this.addSql(`alter table "ticket_types" drop constraint "ticket_types_event_id_foreign";`);
    this.addSql(`alter table "discounts" drop constraint "discounts_event_id_foreign";`);
    this.addSql(`alter table "sales" drop constraint "sales_event_id_foreign";`);
    this.addSql(`alter table "ticket_types" drop constraint "ticket_types_event_date_id_foreign";`);
    this.addSql(`alter table "sales" drop constraint "sales_event_date_id_foreign";`);
    this.addSql(`alter table "ticket_stock" drop constraint "ticket_stock_ticket_type_id_foreign";`);
    this.addSql(`alter table "tickets" drop constraint "tickets_ticket_type_id_foreign";`);
    this.addSql(
      `alter table "sale_stock_allocations" drop constraint "sale_stock_allocations_ticket_type_id_foreign";`,
    );
    this.addSql(`alter table "sale_items" drop constraint "sale_items_ticket_type_id_foreign";`);
    this.addSql(`alter table "sales" drop constraint "sales_discount_id_foreign";`);
    this.addSql(`alter table "tickets" drop constraint "tickets_sale_id_foreign";`);
    this.addSql(`alter table "sale_stock_allocations" drop constraint "sale_stock_allocations_sale_id_foreign";`);
    this.addSql(`alter table "sale_items" drop constraint "sale_items_sale_id_foreign";`);
    this.addSql(`alter table "payment_attempts" drop constraint "payment_attempts_sale_id_foreign";`);

    this.addSql(`drop table if exists "buyers" cascade;`);
    this.addSql(`drop table if exists "buyer_login_codes" cascade;`);
    this.addSql(`drop table if exists "buyer_sessions" cascade;`);
    this.addSql(`drop table if exists "venues" cascade;`);
    this.addSql(`drop table if exists "membership_plans" cascade;`);
    this.addSql(`drop table if exists "membership_subscriptions" cascade;`);
    this.addSql(`drop table if exists "events" cascade;`);
    this.addSql(`drop table if exists "event_dates" cascade;`);
    this.addSql(`drop table if exists "ticket_types" cascade;`);
    this.addSql(`drop table if exists "ticket_stock" cascade;`);
    this.addSql(`drop table if exists "discounts" cascade;`);
    this.addSql(`drop table if exists "sales" cascade;`);
    this.addSql(`drop table if exists "tickets" cascade;`);
    this.addSql(`drop table if exists "sale_stock_allocations" cascade;`);
    this.addSql(`drop table if exists "sale_items" cascade;`);
    this.addSql(`drop table if exists "payment_attempts" cascade;`);

    this.addSql(`alter table "workspaces" drop constraint "workspaces_plan_check";`);
    this.addSql(
      `alter table "workspaces" drop column "service_fee_bps", drop column "service_fee_fixed", drop column "plan", drop column "gateway_ballowlisted", drop column "requires_purchase_session";`,
    );
  }
}
