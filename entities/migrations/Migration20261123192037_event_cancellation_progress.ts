import { Migration } from '@mikro-orm/migrations';

export class Migration20261123192037_event_cancellation_progress extends Migration {
  override name = 'Migration20261123192037_event_cancellation_progress';

  override up(): void | Promise<void> {
    this.addSql(`alter table "events" add "cancellation" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "events" drop column "cancellation";`);
  }
}
