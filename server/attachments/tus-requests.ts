/**
 * What a tus request asks of an upload and what an answer tells of it: the shapes the HTTP side
 * (`http/tus.ts`) parses headers into and describes answers from, and `TusService` works on.
 */
import { hash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { TusUpload } from './tus-repository.ts';

/** The fields an upload is for, from its `Upload-Metadata`. */
export interface TusFields {
  invitationId: string;
  name: string;
  filename: string;
}

export type TusConcat = { kind: 'partial' } | { kind: 'final'; ids: string[]; header: string } | null;

/** What a creation asks for (the HTTP side has parsed and checked the headers' syntax). */
export interface TusCreation {
  /** Null: deferred (`Upload-Defer-Length: 1`); a final upload's is the sum of its parts'. */
  length: number | null;
  metadata: string;
  fields: TusFields;
  concat: TusConcat;
}

/** Where an upload stands, as HEAD and every answer tell it. */
export interface TusState {
  id: string;
  offset: number;
  length: number | null;
  metadata: string;
  /** `partial`, or a final upload's `final;` and its parts' URLs. */
  concat: string | null;
  expiresAt: number;
  /** The stored file's URL once complete (`Attachment-Url`). */
  url: string | null;
}

/** A PATCH (or a creation's bytes): the offset it names, a deferred length it may set, its body, and its checksum. */
export interface TusWrite {
  offset: number;
  length?: number;
  /**
   * Whether the request sends bytes: `true` for a Content-Length over 0, `false` for none, and
   * `'chunked'` for a body sent in chunks, whose length is known only once read (for a complete
   * upload it is read up to its first byte). Bytes for a complete upload are 413.
   */
  sendsBytes: boolean | 'chunked';
  body: Readable;
  checksum?: { algorithm: 'sha1' | 'sha256' | 'md5'; digest: Buffer };
}

/**
 * A final upload's parts as one key: the SHA-256 of their ids in order. The same parts written
 * as absolute URLs or as paths are one final upload; and a key of fixed length fits an index,
 * where an `Upload-Concat` of many parts does not.
 */
export const finalKey = (ids: readonly string[]): string => hash('sha256', ids.join(' '));

/** Where an upload stands, from its row. */
export const stateOf = (u: TusUpload): TusState => ({ id: u.id, offset: u.offset, length: u.length, metadata: u.metadata, concat: u.concatHeader ?? u.concat, expiresAt: u.expiresAt, url: u.url });
