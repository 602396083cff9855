/**
 * How stored files and chunks are named, in either back end. Every name is built from a
 * validated hex hash, a validated extension or a server-made id, never from what a client sends:
 * these are the checks that make it so.
 */
import { fileUrlExtension } from '../../../shared/forms.ts';

/** The URL a stored file is known by. */
export function urlOf(sha1: string, extension: string): string {
  return extension === 'pdf' ? `/pdf/${sha1}.pdf` : `/attachment/${sha1}.${extension}`;
}

/** A stored file's name below the store's `files/` (`pdf/<sha1>.pdf`, `attachment/<sha1>.<ext>`), or null when the URL is not one of ours. */
export function storedName(url: string): string | null {
  const extension = fileUrlExtension(url);
  if (extension === null) return null;
  const name = url.slice(url.lastIndexOf('/') + 1);
  return `${extension === 'pdf' && url.startsWith('/pdf/') ? 'pdf' : 'attachment'}/${name}`;
}

/** Upload ids are server-made UUIDs: anything else never becomes part of a name. */
export function checkUploadId(uploadId: string): string {
  if (!/^[0-9a-f-]{36}$/.test(uploadId)) throw new Error(`not an upload id: ${uploadId}`);
  return uploadId;
}
