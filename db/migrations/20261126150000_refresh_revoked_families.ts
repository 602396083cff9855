import type { Knex } from 'knex';

/**
 * Every use of a refresh token asks whether its family was revoked (`RefreshRepository.find`:
 * a revocation that ran while a successor was being stored leaves that successor live in a
 * revoked family). By `family_id` alone that read every token the family ever rotated, one
 * more per use, until the sweep deletes those past their idle lifetime (an app refreshing hourly:
 * 336 rows read per refresh with the default 14 days, 720 with 30). This index holds only
 * revoked tokens, so the question is one seek whatever the family's length.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_refresh_tokens', (t) => {
    t.index(['family_id'], 'oidc_refresh_tokens_revoked_family', { predicate: db.whereNotNull('revoked_at') });
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_refresh_tokens', (t) => {
    t.dropIndex(['family_id'], 'oidc_refresh_tokens_revoked_family');
  });
}
