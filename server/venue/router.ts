import {
  AddMembersInput,
  AuthorConsole,
  AuthorConsoleConfig,
  GroupMembersResult,
  Invitation,
  InvitationInput,
  InvitationsQuery,
  InvitationsResult,
  Note,
  NoteEditsQuery,
  NoteEditsResult,
  NotesQuery,
  NotesResult,
  PostNoteInput,
  VenueQuery,
} from '../../shared/index.ts';
import { authedProcedure, publicProcedure, router } from '../trpc.ts';

export const venueRouter = router({
  createVenue: authedProcedure
    .input(AuthorConsoleConfig)
    .output(AuthorConsoleConfig)
    .mutation(({ ctx, input }) => ctx.services.venue.createVenue(input, ctx.user)),

  venueConfig: publicProcedure
    .input(VenueQuery)
    .output(AuthorConsoleConfig)
    .query(({ ctx, input }) => ctx.services.venue.venueConfig(input.venueId)),

  authorConsole: authedProcedure
    .input(VenueQuery)
    .output(AuthorConsole)
    .query(({ ctx, input }) => ctx.services.venue.authorConsole(input.venueId, ctx.user)),

  addMembers: authedProcedure
    .input(AddMembersInput)
    .output(GroupMembersResult)
    .mutation(({ ctx, input }) => ctx.services.venue.addMembers(input, ctx.user)),

  saveInvitation: authedProcedure
    .input(InvitationInput)
    .output(Invitation)
    .mutation(({ ctx, input }) => ctx.services.venue.saveInvitation(input, ctx.user)),

  invitations: authedProcedure
    .input(InvitationsQuery)
    .output(InvitationsResult)
    .query(async ({ ctx, input }) => ({ invitations: [await ctx.services.venue.invitation(input.id, ctx.user)] })),

  postNote: authedProcedure
    .input(PostNoteInput)
    .output(Note)
    .mutation(({ ctx, input }) => ctx.services.venue.postNote(input, ctx.user)),

  notes: publicProcedure
    .input(NotesQuery)
    .output(NotesResult)
    .query(async ({ ctx, input }) => {
      const notes = await ctx.services.venue.notes(input, await ctx.optionalViewer());
      return { notes, count: notes.length };
    }),

  noteEdits: publicProcedure
    .input(NoteEditsQuery)
    .output(NoteEditsResult)
    .query(async ({ ctx, input }) => ({ edits: await ctx.services.venue.edits(input['note.id'], await ctx.optionalViewer()) })),
});
