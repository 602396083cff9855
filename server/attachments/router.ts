import { PdfCompareQuery, PdfCompareResult } from '../../shared/index.ts';
import { publicProcedure, router } from '../trpc.ts';

/**
 * The attachment procedures that answer JSON. Uploads and file downloads are streams, served by
 * the HTTP adapter (`server/http/files.ts`) on the same service.
 */
export const attachmentsRouter = router({
  compare: publicProcedure
    .input(PdfCompareQuery)
    .output(PdfCompareResult)
    .query(async ({ ctx, input }) => ctx.services.attachments.compare(input, await ctx.optionalViewer())),
});
