import { Migration } from '@mikro-orm/migrations';

export class Migration20261123191346_memberships_and_settlements extends Migration {
  override name = 'Migration20261123191346_memberships_and_settlements';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "payout_accounts" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "holder_name" varchar(160) not null, "bank_name" varchar(120) not null, "account_last4" varchar(4) not null, "default_percentage" int not null, "active" boolean not null default true, primary key ("id"));`,
    );
    this.addSql(`create index "payout_accounts_workspace_id_index" on "payout_accounts" ("workspace_id");`);

    this.addSql(
      `create table "membership_payments" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "subscription_id" uuid not null, "period_number" int not null, "reference" varchar(16) not null, "gateway" text not null, "preference_id" varchar(120) null, "checkout_url" text null, "provider_payment_id" varchar(120) null, "amount" int not null, "currency" varchar(3) not null, "status" text not null default 'OPEN', "status_detail" varchar(120) null, "expires_at" timestamptz null, "approved_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `create index "membership_payments_subscription_id_index" on "membership_payments" ("subscription_id");`,
    );
    this.addSql(
      `alter table "membership_payments" add constraint "membership_payments_reference_unique" unique ("reference");`,
    );
    this.addSql(
      `alter table "membership_payments" add constraint "membership_payments_provider_payment_id_unique" unique ("provider_payment_id");`,
    );

    this.addSql(
      `create table "settlements" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "reference" varchar(16) not null, "label" varchar(200) not null, "status" text not null, "event_id" uuid null, "event_date_id" uuid null, "amount" int not null, "gross_amount" int null, "units_sold" int null, "currency" varchar(3) not null, "figures" jsonb not null, "notes" text null, "rejection_reason" text null, "allocations" jsonb not null, "sent_at" timestamptz null, "requested_at" timestamptz null, "paid_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "settlements" add constraint "settlements_reference_unique" unique ("reference");`);
    this.addSql(
      `alter table "settlements" add constraint "settlements_event_date_id_unique" unique ("event_date_id");`,
    );
    this.addSql(
      `create index "settlements_workspace_id_status_id_index" on "settlements" ("workspace_id", "status", "id");`,
    );
    this.addSql(
      `create index "settlements_workspace_id_event_id_id_index" on "settlements" ("workspace_id", "event_id", "id");`,
    );

    this.addSql(
      `create table "settlement_files" ("id" uuid not null, "settlement_id" uuid not null, "kind" text not null, "file_name" varchar(120) not null, "content_type" varchar(100) not null, "byte_size" int not null, "sha256" varchar(64) not null, "content" bytea not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "settlement_files" add constraint "settlement_files_settlement_id_kind_file_name_unique" unique ("settlement_id", "kind", "file_name");`,
    );

    this.addSql(
      `create table "settlement_sales" ("settlement_id" uuid not null, "sale_id" uuid not null, "net" int not null, primary key ("settlement_id", "sale_id"));`,
    );
    this.addSql(`create index "settlement_sales_sale_id_index" on "settlement_sales" ("sale_id");`);

    this.addSql(
      `create table "settlement_adjustments" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" uuid not null, "sale_id" uuid not null, "origin_settlement_id" uuid not null, "applied_settlement_id" uuid null, "amount" int not null, "reason" varchar(200) not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "settlement_adjustments_workspace_id_index" on "settlement_adjustments" ("workspace_id");`,
    );
    this.addSql(
      `alter table "settlement_adjustments" add constraint "settlement_adjustments_sale_id_unique" unique ("sale_id");`,
    );
    this.addSql(
      `create index "settlement_adjustments_applied_settlement_id_index" on "settlement_adjustments" ("applied_settlement_id");`,
    );

    this.addSql(
      `alter table "membership_subscriptions" add "renewal_state" text not null default 'AWAITING_SIGNUP_PAYMENT', add "period_number" int not null default 0, add "activated_at" timestamptz null, add "current_period_start" timestamptz null, add "period_price" int null, add "period_benefits" jsonb null, add "currency" varchar(3) null, add "cancelled_by" varchar(20) null, add "ended_at" timestamptz null, add "end_reason" varchar(40) null;`,
    );
    // Existing subscriptions take their plan's currency before the column becomes required.
    this.addSql(
      `update "membership_subscriptions" s set "currency" = p."currency" from "membership_plans" p where p."id" = s."plan_id";`,
    );
    this.addSql(`alter table "membership_subscriptions" alter column "currency" set not null;`);
    this.addSql(
      `create index "membership_subscriptions_workspace_id_status_id_index" on "membership_subscriptions" ("workspace_id", "status", "id");`,
    );
    this.addSql(
      `alter table "membership_subscriptions" add constraint "membership_subscriptions_renewal_state_check" check ("renewal_state" in ('AWAITING_SIGNUP_PAYMENT', 'SCHEDULED', 'DUE', 'PAID', 'CANCEL_AT_PERIOD_END', 'FAILED', 'ENDED'));`,
    );

    this.addSql(
      `alter table "payout_accounts" add constraint "payout_accounts_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "membership_payments" add constraint "membership_payments_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "membership_payments" add constraint "membership_payments_subscription_id_foreign" foreign key ("subscription_id") references "membership_subscriptions" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "membership_payments" add constraint "membership_payments_gateway_check" check ("gateway" in ('GATEWAY_A', 'GATEWAY_B'));`,
    );
    this.addSql(
      `alter table "membership_payments" add constraint "membership_payments_status_check" check ("status" in ('OPEN', 'APPROVED', 'REJECTED', 'EXPIRED', 'REFUND_REQUESTED', 'REFUNDED'));`,
    );

    this.addSql(
      `alter table "settlements" add constraint "settlements_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "settlements" add constraint "settlements_event_id_foreign" foreign key ("event_id") references "events" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "settlements" add constraint "settlements_event_date_id_foreign" foreign key ("event_date_id") references "event_dates" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "settlements" add constraint "settlements_status_check" check ("status" in ('DRAFT', 'REVIEW', 'SENT', 'AWAITING_PAYMENT', 'PAID'));`,
    );

    this.addSql(
      `alter table "settlement_files" add constraint "settlement_files_settlement_id_foreign" foreign key ("settlement_id") references "settlements" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "settlement_files" add constraint "settlement_files_kind_check" check ("kind" in ('DOCUMENT', 'PROOF'));`,
    );

    this.addSql(
      `alter table "settlement_sales" add constraint "settlement_sales_settlement_id_foreign" foreign key ("settlement_id") references "settlements" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "settlement_sales" add constraint "settlement_sales_sale_id_foreign" foreign key ("sale_id") references "sales" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(
      `alter table "settlement_adjustments" add constraint "settlement_adjustments_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "settlement_adjustments" add constraint "settlement_adjustments_sale_id_foreign" foreign key ("sale_id") references "sales" ("id");`,
    );
    this.addSql(
      `alter table "settlement_adjustments" add constraint "settlement_adjustments_origin_settlement_id_foreign" foreign key ("origin_settlement_id") references "settlements" ("id");`,
    );
    this.addSql(
      `alter table "settlement_adjustments" add constraint "settlement_adjustments_applied_settlement_id_foreign" foreign key ("applied_settlement_id") references "settlements" ("id") on delete set null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "settlement_files" drop constraint "settlement_files_settlement_id_foreign";`);
    this.addSql(`alter table "settlement_sales" drop constraint "settlement_sales_settlement_id_foreign";`);
    this.addSql(
      `alter table "settlement_adjustments" drop constraint "settlement_adjustments_origin_settlement_id_foreign";`,
    );
    this.addSql(
      `alter table "settlement_adjustments" drop constraint "settlement_adjustments_applied_settlement_id_foreign";`,
    );

    this.addSql(`drop table if exists "payout_accounts" cascade;`);
    this.addSql(`drop table if exists "membership_payments" cascade;`);
    this.addSql(`drop table if exists "settlements" cascade;`);
    this.addSql(`drop table if exists "settlement_files" cascade;`);
    this.addSql(`drop table if exists "settlement_sales" cascade;`);
    this.addSql(`drop table if exists "settlement_adjustments" cascade;`);

    this.addSql(`drop index "membership_subscriptions_workspace_id_status_id_index";`);
    this.addSql(
      `alter table "membership_subscriptions" drop constraint "membership_subscriptions_renewal_state_check";`,
    );
    this.addSql(
      `alter table "membership_subscriptions" drop column "renewal_state", drop column "period_number", drop column "activated_at", drop column "current_period_start", drop column "period_price", drop column "period_benefits", drop column "currency", drop column "cancelled_by", drop column "ended_at", drop column "end_reason";`,
    );
  }
}
