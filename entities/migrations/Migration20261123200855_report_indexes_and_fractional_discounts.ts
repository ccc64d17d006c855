import { Migration } from '@mikro-orm/migrations';

export class Migration20261123200855_report_indexes_and_fractional_discounts extends Migration {
  override name = 'Migration20261123200855_report_indexes_and_fractional_discounts';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "event_dates_workspace_id_starts_at_index" on "event_dates" ("workspace_id", "starts_at");`,
    );

    this.addSql(`alter table "discounts" alter column "value" type numeric(12,2) using ("value"::numeric(12,2));`);

    this.addSql(
      `create index "sales_workspace_id_status_created_at_index" on "sales" ("workspace_id", "status", "created_at");`,
    );
    this.addSql(
      `create index "sales_workspace_id_event_id_created_at_index" on "sales" ("workspace_id", "event_id", "created_at");`,
    );

    this.addSql(`create index "tickets_workspace_id_id_index" on "tickets" ("workspace_id", "id");`);
    this.addSql(
      `create index "tickets_workspace_id_event_id_id_index" on "tickets" ("workspace_id", "event_id", "id");`,
    );
    this.addSql(
      `create index "tickets_workspace_id_event_date_id_id_index" on "tickets" ("workspace_id", "event_date_id", "id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "discounts" alter column "value" type int using ("value"::int);`);

    this.addSql(`drop index "event_dates_workspace_id_starts_at_index";`);

    this.addSql(`drop index "sales_workspace_id_status_created_at_index";`);
    this.addSql(`drop index "sales_workspace_id_event_id_created_at_index";`);

    this.addSql(`drop index "tickets_workspace_id_id_index";`);
    this.addSql(`drop index "tickets_workspace_id_event_id_id_index";`);
    this.addSql(`drop index "tickets_workspace_id_event_date_id_id_index";`);
  }
}
