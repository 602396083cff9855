import type { Knex } from 'knex';

/**
 * Passkeys (issue 17), WebAuthn credentials of the accounts area:
 * - `passkeys`: one row per credential: its id (base64url, the key), whose it is, its COSE
 *   public key (base64url), the signature counter last seen (an assertion whose counter did not
 *   move forward is refused: a cloned authenticator), the transports the browser reported,
 *   whether it is backed up (synced, `swk`) or bound to one device (`hwk`), the name its owner
 *   gave it, when it was made and last used.
 * - `passkey_user_handles`: the random WebAuthn user handle of each person who has made a
 *   passkey (authenticators keep it with a discoverable credential and hand it back on a
 *   passwordless sign-in); random, so it says nothing about the person.
 * - `passkey_challenges`: every ceremony's challenge, under a key the caller names (a pending
 *   sign-in's id, a passwordless sign-in's challenge id, a registration's); used once (the row is
 *   deleted by the statement that reads it), valid until `expires_at`.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('passkeys', (t) => {
    t.text('credential_id').primary();
    t.text('profile_id').notNullable().index();
    t.text('public_key').notNullable();
    t.bigInteger('counter').notNullable().defaultTo(0);
    t.text('transports').notNullable().defaultTo('[]');
    t.boolean('backed_up').notNullable().defaultTo(false);
    t.text('device_type').notNullable();
    t.text('name').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('last_used_at').nullable();
  });
  await db.schema.createTable('passkey_user_handles', (t) => {
    t.text('profile_id').primary();
    t.text('user_handle').notNullable().unique();
  });
  await db.schema.createTable('passkey_challenges', (t) => {
    t.text('key').primary();
    t.text('kind').notNullable();
    t.text('challenge').notNullable();
    // The person a ceremony is for; null for a passwordless sign-in (anyone's passkey).
    t.text('profile_id').nullable();
    t.bigInteger('expires_at').notNullable().index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('passkey_challenges');
  await db.schema.dropTable('passkey_user_handles');
  await db.schema.dropTable('passkeys');
}
