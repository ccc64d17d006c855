import { Migration } from '@mikro-orm/migrations';

export class Migration20261129011903_waiting_room_active_bounds extends Migration {
  override name = 'Migration20261129011903_waiting_room_active_bounds';

  override up(): void | Promise<void> {
    this.addSql(`alter table "event_dates" add "queue_min_active" int null, add "queue_max_active" int null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "event_dates" drop column "queue_min_active", drop column "queue_max_active";`);
  }
}
