import type { Knex } from 'knex';
import { fromJson as json } from '../../db/json.ts';
import { fileUrlExtension, type FormDefinition, type Invitation, type Note, type NoteEdit } from '../../shared/index.ts';

interface InvitationRow {
  id: string;
  domain: string;
  data: string;
  duedate: number | null;
  tauthor: string;
  tcdate: number;
  tmdate: number;
}

interface InvitationData {
  form: FormDefinition;
  invitees: string[];
  noteReaders: string[];
  noteWriters: string[];
  readers: string[];
  replyTo?: string;
}

interface NoteRow {
  id: string;
  invitation: string;
  domain: string;
  number: number;
  forum: string;
  replyto: string | null;
  content: string;
  signatures: string;
  readers: string;
  writers: string;
  cdate: number;
  mdate: number;
  ddate: number | null;
  tcdate: number;
  tmdate: number;
}

function toInvitation(row: InvitationRow): Invitation {
  const data = json<InvitationData>(row.data);
  return {
    id: row.id,
    domain: row.domain,
    ...data,
    ...(row.duedate !== null ? { duedate: Number(row.duedate) } : {}),
    tauthor: row.tauthor,
    tcdate: Number(row.tcdate),
    tmdate: Number(row.tmdate),
  };
}

function toNote(row: NoteRow): Note {
  return {
    id: row.id,
    invitation: row.invitation,
    invitations: [row.invitation],
    version: 2,
    domain: row.domain,
    number: Number(row.number),
    forum: row.forum,
    replyto: row.replyto,
    content: json<Record<string, unknown>>(row.content),
    signatures: json<string[]>(row.signatures),
    readers: json<string[]>(row.readers),
    writers: json<string[]>(row.writers),
    cdate: Number(row.cdate),
    mdate: Number(row.mdate),
    ...(row.ddate !== null ? { ddate: Number(row.ddate) } : {}),
    tcdate: Number(row.tcdate),
    tmdate: Number(row.tmdate),
  };
}

function toEdit(row: Record<string, unknown>): NoteEdit {
  return {
    id: String(row.id),
    note: { id: String(row.note_id), content: json<Record<string, unknown>>(row.content) },
    invitation: String(row.invitation),
    content: json<Record<string, unknown>>(row.content),
    signatures: json<string[]>(row.signatures),
    readers: json<string[]>(row.readers),
    writers: json<string[]>(row.writers),
    tauthor: String(row.tauthor),
    tcdate: Number(row.tcdate),
  };
}

/** A content filter's value in a note's content: `title`'s value, or the `username`s of the objects `authors`'s value lists (`authors.username`). */
function valueAt(content: Record<string, unknown>, key: string): unknown {
  const [field = '', inner] = key.split('.');
  const value = (content[field] as { value?: unknown } | undefined)?.value;
  if (inner === undefined) return value;
  const objects = Array.isArray(value) ? value : [value];
  return objects.map((item) => (item !== null && typeof item === 'object' ? (item as Record<string, unknown>)[inner] : undefined));
}

/** Whether a content value matches a query's `content.<field>=wanted`: equal as text, or a list holding it. */
function holds(value: unknown, wanted: string): boolean {
  if (Array.isArray(value)) return value.some((item) => holds(item, wanted));
  return (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') && String(value) === wanted;
}

/** The author ids a note's `content.authorids` holds, for the author index. */
export function authorIdsOf(content: Record<string, unknown>): string[] {
  const value = (content.authorids as { value?: unknown } | undefined)?.value;
  return Array.isArray(value) ? [...new Set(value.filter((v): v is string => typeof v === 'string'))] : [];
}

/** SQL for invitations, notes and their revisions. Given its Knex (or a transaction). */
export class VenueRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  /** Runs `work` in a transaction; `trx` lets another area's writes join it. */
  transaction<T>(work: (repo: VenueRepository, trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return this.#db.transaction((trx) => work(new VenueRepository(trx), trx));
  }

  async upsertInvitation(invitation: Invitation): Promise<void> {
    const { id, domain, duedate, tauthor, tcdate, tmdate, ...data } = invitation;
    await this.#db('invitations')
      .insert({ id, domain, data: JSON.stringify(data), duedate: duedate ?? null, tauthor, tcdate, tmdate })
      .onConflict('id')
      .merge({ domain, data: JSON.stringify(data), duedate: duedate ?? null, tauthor, tmdate });
  }

  async findInvitation(id: string): Promise<Invitation | null> {
    const row = await this.#db<InvitationRow>('invitations').where({ id }).first();
    return row ? toInvitation(row) : null;
  }

  async nextNumber(invitation: string): Promise<number> {
    const row = await this.#db('notes').where({ invitation }).max({ n: 'number' }).first();
    return Number(row?.n ?? 0) + 1;
  }

  /** Stores a new note; `fileFields` are its form's fields of type `file`. */
  async insertNote(note: Note, fileFields: readonly string[]): Promise<void> {
    await this.#db('notes').insert(this.#noteRow(note));
    await this.#index(note, fileFields);
  }

  async updateNote(note: Note, fileFields: readonly string[]): Promise<void> {
    const { id, ...row } = this.#noteRow(note);
    await this.#db('notes').where({ id }).update(row);
    await this.#db('note_authors').where({ note_id: id }).delete();
    await this.#index(note, fileFields);
  }

  #noteRow(note: Note) {
    const { invitations: _derived, version: _always2, ...stored } = note;
    return {
      ...stored,
      ddate: note.ddate ?? null,
      content: JSON.stringify(note.content),
      signatures: JSON.stringify(note.signatures),
      readers: JSON.stringify(note.readers),
      writers: JSON.stringify(note.writers),
    };
  }

  /**
   * The author index, and the file index: the URLs held by the note's `file` fields (only those:
   * a URL typed into a text field gives no right to read the file).
   */
  async #index(note: Note, fileFields: readonly string[]): Promise<void> {
    const authors = authorIdsOf(note.content);
    if (authors.length > 0) await this.#db('note_authors').insert(authors.map((author) => ({ note_id: note.id, author })));
    const files = fileFields
      .map((field) => ({ field, url: (note.content[field] as { value?: unknown } | undefined)?.value }))
      .filter((f): f is { field: string; url: string } => typeof f.url === 'string' && fileUrlExtension(f.url) !== null);
    if (files.length > 0) {
      await this.#db('note_files')
        .insert(files.map((f) => ({ note_id: note.id, field: f.field, url: f.url })))
        .onConflict(['note_id', 'field', 'url'])
        .ignore();
    }
  }

  /** Whether the note's `field` held `url` as a file when a revision of it was written (the file index). */
  async heldAsFile(noteId: string, field: string, url: string): Promise<boolean> {
    return (await this.#db('note_files').where({ note_id: noteId, field, url }).first('url')) !== undefined;
  }

  /** The notes whose fields hold, or once held, a stored file's URL. */
  async notesWithFile(url: string): Promise<Note[]> {
    const rows = await this.#db<NoteRow>('notes')
      .whereIn('id', this.#db('note_files').where({ url }).select('note_id'))
      .whereNull('ddate')
      .select('*');
    return rows.map(toNote);
  }

  /** Records a revision of the note as it now stands; answers the revision's id. */
  async insertEdit(note: Note, tauthor: string, now: number): Promise<string> {
    const [row] = await this.#db('note_edits')
      .insert({
        note_id: note.id,
        invitation: note.invitation,
        content: JSON.stringify(note.content),
        signatures: JSON.stringify(note.signatures),
        readers: JSON.stringify(note.readers),
        writers: JSON.stringify(note.writers),
        tauthor,
        tcdate: now,
        ddate: note.ddate ?? null,
      })
      .returning('id');
    return String(typeof row === 'object' ? (row as { id: unknown }).id : row);
  }

  async findNote(id: string): Promise<Note | null> {
    const row = await this.#db<NoteRow>('notes').where({ id }).first();
    return row ? toNote(row) : null;
  }

  /**
   * Notes matching every criterion given, in posting order; deleted notes only with `trash`.
   * `content` filters run here on the decoded content (a list matches when it holds the value).
   */
  async findNotes(query: {
    id?: string;
    invitation?: string;
    /** Of any of these invitations. */
    invitations?: readonly string[];
    forum?: string;
    replyto?: string;
    domain?: string;
    number?: number;
    author?: string[];
    /** Signed by any of these ids. */
    signedBy?: string[];
    /** Created at or after this time. */
    mintcdate?: number;
    content?: ReadonlyMap<string, string>;
    trash?: boolean;
  }): Promise<Note[]> {
    const q = this.#db<NoteRow>('notes').select('notes.*');
    if (query.id) q.where('notes.id', query.id);
    if (query.invitation) q.where('notes.invitation', query.invitation);
    if (query.invitations) q.whereIn('notes.invitation', query.invitations);
    if (query.forum) q.where('notes.forum', query.forum);
    if (query.replyto) q.where('notes.replyto', query.replyto);
    if (query.domain) q.where('notes.domain', query.domain);
    if (query.number !== undefined) q.where('notes.number', query.number);
    if (!query.trash) q.whereNull('notes.ddate');
    if (query.mintcdate !== undefined) q.where('notes.tcdate', '>=', query.mintcdate);
    const signedBy = query.signedBy;
    if (signedBy) {
      // Signatures are stored as a JSON list: match the quoted id, LIKE's wildcards taken literally.
      q.where((w) => {
        for (const id of signedBy) w.orWhereRaw(`notes.signatures like ? escape '\\'`, [`%${JSON.stringify(id).replace(/[\\%_]/g, (c) => `\\${c}`)}%`]);
      });
    }
    if (query.author) {
      q.whereIn('notes.id', this.#db('note_authors').whereIn('author', query.author).select('note_id'));
    }
    const rows = await q.orderBy('notes.tcdate').orderBy('notes.number');
    const notes = rows.map(toNote);
    const filters = [...(query.content ?? new Map<string, string>())];
    if (filters.length === 0) return notes;
    return notes.filter((note) => filters.every(([key, wanted]) => holds(valueAt(note.content, key), wanted)));
  }

  async editsOf(noteId: string): Promise<NoteEdit[]> {
    const rows = await this.#db('note_edits').where({ note_id: noteId }).orderBy('id');
    return rows.map(toEdit);
  }

  async findEdit(id: string): Promise<NoteEdit | null> {
    const row = await this.#db('note_edits').where({ id: Number(id) }).first();
    return row ? toEdit(row) : null;
  }

  /** Marks a note deleted at `now` (its row, revisions and file records stay). */
  async deleteNote(id: string, now: number): Promise<void> {
    await this.#db('notes').where({ id }).update({ ddate: now, tmdate: now });
  }

  /** The domains (venue ids) of these invitations. */
  async domainsOfInvitations(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    return this.#db('invitations').whereIn('id', ids).distinct().pluck('domain');
  }

}
