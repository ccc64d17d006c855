import { Migration } from '@mikro-orm/migrations';

export class Migration20261129013337_slugs_claimed_when_public extends Migration {
  override name = 'Migration20261129013337_slugs_claimed_when_public';

  override up(): void | Promise<void> {
    this.addSql(`alter table "workspaces" drop constraint "workspaces_slug_unique";`);
    this.addSql(`create index "workspaces_slug_index" on "workspaces" ("slug");`);

    this.addSql(`alter table "events" drop constraint "events_slug_unique";`);
    this.addSql(`alter table "events" add constraint "events_workspace_slug_unique" unique ("workspace_id", "slug");`);
    this.addSql(`create unique index "events_public_slug_unique" on "events" ("slug") where published_at is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "events" drop constraint "events_workspace_slug_unique";`);
    this.addSql(`drop index "events_public_slug_unique";`);
    this.addSql(`alter table "events" add constraint "events_slug_unique" unique ("slug");`);

    this.addSql(`drop index "workspaces_slug_index";`);
    this.addSql(`alter table "workspaces" add constraint "workspaces_slug_unique" unique ("slug");`);
  }
}
