import { Migration } from '@mikro-orm/migrations';

export class Migration20261128214929_playback_ids_unique_platform_wide extends Migration {
  override name = 'Migration20261128214929_playback_ids_unique_platform_wide';

  // A playback id is held by one workspace on the whole platform (api/services/content.ts). Should two workspaces
  // already hold the same one, the new constraint fails and the migration stops: that pair is the cross-workspace
  // replay this closes, for an operator to resolve (keep the owner's row, the one the provider's passthrough names).
  override up(): void | Promise<void> {
    this.addSql(`alter table "content_videos" drop constraint "content_videos_workspace_id_provider_asset_id_unique";`);
    this.addSql(
      `alter table "content_videos" add constraint "content_videos_provider_asset_id_unique" unique ("provider_asset_id");`,
    );

    this.addSql(`alter table "content_lives" drop constraint "content_lives_workspace_id_provider_stream_id_unique";`);
    this.addSql(
      `alter table "content_lives" add constraint "content_lives_provider_stream_id_unique" unique ("provider_stream_id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "content_lives" drop constraint "content_lives_provider_stream_id_unique";`);
    this.addSql(
      `alter table "content_lives" add constraint "content_lives_workspace_id_provider_stream_id_unique" unique ("workspace_id", "provider_stream_id");`,
    );

    this.addSql(`alter table "content_videos" drop constraint "content_videos_provider_asset_id_unique";`);
    this.addSql(
      `alter table "content_videos" add constraint "content_videos_workspace_id_provider_asset_id_unique" unique ("workspace_id", "provider_asset_id");`,
    );
  }
}
