import { Migration } from '@mikro-orm/migrations';

export class Migration20261129011742_staff_invitations extends Migration {
  override name = 'Migration20261129011742_staff_invitations';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "staff_invitations" ("id" uuid not null, "workspace_id" uuid not null, "email" varchar(254) not null, "name" varchar(120) not null, "role" text not null, "sections" jsonb null, "access_expires_at" timestamptz null, "invited_by_id" uuid null, "token_hash" varchar(64) null, "expires_at" timestamptz not null, "accepted_at" timestamptz null, "cancelled_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "staff_invitations" add constraint "staff_invitations_token_hash_unique" unique ("token_hash");`,
    );
    this.addSql(`create index "staff_invitations_workspace_email" on "staff_invitations" ("workspace_id", "email");`);

    this.addSql(
      `alter table "staff_invitations" add constraint "staff_invitations_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "staff_invitations" add constraint "staff_invitations_invited_by_id_foreign" foreign key ("invited_by_id") references "users" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "staff_invitations" add constraint "staff_invitations_role_check" check ("role" in ('VIEWER', 'STAFF', 'ADMIN', 'SUPER_ADMIN', 'MINCULTURA'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "staff_invitations" cascade;`);
  }
}
