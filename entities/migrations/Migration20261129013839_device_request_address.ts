import { Migration } from '@mikro-orm/migrations';

export class Migration20261129013839_device_request_address extends Migration {
  override name = 'Migration20261129013839_device_request_address';

  override up(): void | Promise<void> {
    this.addSql(`alter table "device_authorizations" add "requested_from" varchar(64) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "device_authorizations" drop column "requested_from";`);
  }
}
