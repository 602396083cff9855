import type { Knex } from 'knex';

/**
 * Invitations (a form, who may post to it, until when), notes (content posted through an
 * invitation), every revision of a note, the author index of notes, and the record of uploads
 * that lets a note's file field accept a URL only from its uploader.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('invitations', (t) => {
    t.string('id', 300).primary();
    t.string('domain', 300).notNullable();
    // form, invitees, noteReaders, noteWriters, readers, writers, replyTo (JSON)
    t.text('data').notNullable();
    t.bigInteger('duedate').nullable();
    t.string('tauthor', 300).notNullable();
    t.bigInteger('tcdate').notNullable();
    t.bigInteger('tmdate').notNullable();
    t.index(['domain']);
  });
  await db.schema.createTable('notes', (t) => {
    t.string('id', 40).primary();
    t.string('invitation', 300).notNullable().references('id').inTable('invitations');
    t.string('domain', 300).notNullable();
    t.integer('number').notNullable();
    t.string('forum', 40).notNullable();
    t.string('replyto', 40).nullable();
    t.text('content').notNullable();
    t.text('signatures').notNullable();
    t.text('readers').notNullable();
    t.text('writers').notNullable();
    t.bigInteger('cdate').notNullable();
    t.bigInteger('mdate').notNullable();
    t.bigInteger('tcdate').notNullable();
    t.bigInteger('tmdate').notNullable();
    t.unique(['invitation', 'number']);
    t.index(['forum']);
  });
  await db.schema.createTable('note_authors', (t) => {
    t.string('note_id', 40).notNullable().references('id').inTable('notes').onDelete('CASCADE');
    t.string('author', 300).notNullable();
    t.primary(['note_id', 'author']);
    t.index(['author']);
  });
  await db.schema.createTable('note_edits', (t) => {
    t.increments('id');
    t.string('note_id', 40).notNullable().references('id').inTable('notes').onDelete('CASCADE');
    t.string('invitation', 300).notNullable();
    t.text('content').notNullable();
    t.text('signatures').notNullable();
    t.text('readers').notNullable();
    t.text('writers').notNullable();
    t.string('tauthor', 300).notNullable();
    t.bigInteger('tcdate').notNullable();
    t.index(['note_id']);
  });
  await db.schema.createTable('uploads', (t) => {
    t.increments('id');
    t.string('profile_id', 300).notNullable().references('id').inTable('profiles');
    t.string('invitation', 300).notNullable().references('id').inTable('invitations');
    t.string('field', 80).notNullable();
    t.string('url', 200).notNullable();
    t.bigInteger('size').notNullable();
    t.string('sha1', 40).notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['url', 'profile_id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('uploads');
  await db.schema.dropTable('note_edits');
  await db.schema.dropTable('note_authors');
  await db.schema.dropTable('notes');
  await db.schema.dropTable('invitations');
}
