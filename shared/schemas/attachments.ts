import { z } from 'zod';
import { idList, NonEmptyString, queryInt } from './common.ts';

/** An attachment field name: 1 to 80 letters, digits, `_` or `-`, not starting with `-`. */
export const AttachmentName = z
  .string()
  .min(1)
  .max(80)
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_-]*$/, {
    message: 'Only letters, digits, underscore and hyphen are allowed, and it must not start with a hyphen',
  });

/** Identifies all chunks of one file: 1 to 25 letters, digits, `_` or `-`. */
export const ClientUploadId = z
  .string()
  .min(1)
  .max(25)
  .regex(/^[A-Za-z0-9_-]+$/, { message: 'Only letters, digits, underscore and hyphen are allowed' });

/** The text fields of `PUT /attachment` (the file part travels beside them). */
export const UploadFields = z.strictObject({
  name: AttachmentName,
  invitationId: NonEmptyString,
});
export type UploadFields = z.infer<typeof UploadFields>;

/**
 * The text fields of `PUT /attachment/chunk`; numbers arrive as multipart text, in decimal digits
 * (an empty field, `0x1` or ` 1` is refused, where a number's coercion read them as 0, 1 and 1).
 */
export const ChunkFields = UploadFields.extend({
  clientUploadId: ClientUploadId,
  /** From 0 or from 1 (`chunked-uploads.ts`), so at most `totalChunks`. */
  chunkIndex: queryInt(0, 10_000),
  /** At most 10 000 chunks: the status map lists every one. */
  totalChunks: queryInt(1, 10_000),
});
export type ChunkFields = z.infer<typeof ChunkFields>;

export const UploadResult = z.strictObject({ url: z.string() });
export const ChunkStatus = z.record(z.string(), z.enum(['missing', 'completed']));

/** `GET /pdf/compare`: two revisions (edit ids) of a note's file field, as existing clients send them. */
export const PdfCompareQuery = z.strictObject({
  noteId: z.string().min(1).max(40),
  leftId: z.string().min(1).max(40),
  rightId: z.string().min(1).max(40),
  field: AttachmentName.default('pdf'),
});
export type PdfCompareQuery = z.infer<typeof PdfCompareQuery>;

/** Several notes' ids (`ids=`), repeated or comma-joined: see `idList`. */
export const NoteIdList = idList(NonEmptyString.max(40), 50);

/** `GET /attachment` and `GET /pdf`: one note (`id`) or several (`ids`, up to 50, answered as a zip). */
export const AttachmentQuery = z
  .strictObject({
    id: NonEmptyString.max(40).optional(),
    ids: NoteIdList.optional(),
    name: AttachmentName,
  })
  .refine((q) => (q.id === undefined) !== (q.ids === undefined), { message: 'Give either id or ids', path: ['id'] });
export const PdfQuery = z
  .strictObject({
    id: NonEmptyString.max(40).optional(),
    ids: NoteIdList.optional(),
  })
  .refine((q) => (q.id === undefined) !== (q.ids === undefined), { message: 'Give either id or ids', path: ['id'] });

/** `GET /pdf/{id}`: a stored PDF by the last part of its URL (`<sha1>.pdf`). */
export const StoredPdfParams = z.strictObject({ id: NonEmptyString.max(100) });

/** `GET /attachment/rules`: the field an upload is for. */
export const UploadRulesQuery = z.strictObject({ invitationId: NonEmptyString, name: AttachmentName });
export type UploadRulesQuery = z.infer<typeof UploadRulesQuery>;

/**
 * What a file for one field must be, so a client can check it before sending a byte:
 * the extensions allowed (null: any), the field's size limit, and the server's ceilings for
 * one `PUT /attachment` and for one chunk. A file above `maxUploadBytes` goes in chunks.
 */
export const UploadRules = z.strictObject({
  extensions: z.array(z.string()).nullable(),
  maxBytes: z.int().min(0),
  maxUploadBytes: z.int().min(1),
  maxChunkBytes: z.int().min(1),
});
export type UploadRules = z.infer<typeof UploadRules>;

/** `GET /attachment/chunk/status`: one of the caller's chunked uploads. */
export const ChunkedUploadQuery = z.strictObject({ clientUploadId: ClientUploadId });

/**
 * Where a chunked upload stands, so a client can resume it: which chunks the server holds
 * (keyed by the indices the client sent), and the URL once it is assembled.
 */
export const ChunkedUploadState = z.strictObject({
  clientUploadId: ClientUploadId,
  totalChunks: z.int().min(1),
  state: z.enum(['receiving', 'assembling', 'done']),
  url: z.string().optional(),
  chunks: ChunkStatus,
  /** The size of each chunk held, so a client resuming with other chunk boundaries is caught. */
  chunkBytes: z.record(z.string(), z.int().min(0)),
});
export type ChunkedUploadState = z.infer<typeof ChunkedUploadState>;
