import { Migration } from '@mikro-orm/migrations';

export class Migration20261129012119_sign_in_code_requester extends Migration {
  override name = 'Migration20261129012119_sign_in_code_requester';

  override up(): void | Promise<void> {
    this.addSql(`alter table "buyer_login_codes" add "requested_by" varchar(64) null;`);

    this.addSql(`alter table "organizer_login_codes" add "requested_by" varchar(64) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "buyer_login_codes" drop column "requested_by";`);

    this.addSql(`alter table "organizer_login_codes" drop column "requested_by";`);
  }
}
