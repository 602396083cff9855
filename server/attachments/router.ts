import {
  ChunkedUploadQuery,
  ChunkedUploadState,
  PdfCompareQuery,
  PdfCompareResult,
  UploadRules,
  UploadRulesQuery,
} from '../../shared/index.ts';
import { authedProcedure, publicProcedure, router } from '../trpc.ts';

/**
 * The attachment procedures that answer JSON. Uploads and file downloads are streams, served by
 * the HTTP adapter (`server/http/files.ts`) on the same services (uploads.ts, chunked-uploads.ts, downloads.ts).
 */
export const attachmentsRouter = router({
  compare: publicProcedure
    .input(PdfCompareQuery)
    .output(PdfCompareResult)
    .query(async ({ ctx, input }) => ctx.services.downloads.compare(input, await ctx.optionalViewer())),

  /** What a file for one field must be: clients check before they send. */
  uploadRules: authedProcedure
    .input(UploadRulesQuery)
    .output(UploadRules)
    .query(({ ctx, input }) => ctx.services.uploads.uploadRules(input)),

  /** Where one of the caller's chunked uploads stands: clients resume from it. */
  chunkedUpload: authedProcedure
    .input(ChunkedUploadQuery)
    .output(ChunkedUploadState)
    .query(({ ctx, input }) => ctx.services.chunkedUploads.chunkedUpload(ctx.user, input.clientUploadId)),
});
