import {
  AddMembersInput,
  AuthorConsole,
  AuthorConsoleConfig,
  DeleteNoteInput,
  GroupMembersResult,
  GroupsQuery,
  GroupsResult,
  InvitationInput,
  invitationView,
  InvitationView,
  InvitationsQuery,
  InvitationsResult,
  Note,
  NoteEditsQuery,
  NoteEditsResult,
  NotesQuery,
  NotesResult,
  PostedNoteEdit,
  ProcessLogsQuery,
  ProcessLogsResult,
  PostNoteEditInput,
  PostNoteInput,
  StatusResult,
  VenueQuery,
  VenuesQuery,
  VenuesResult,
} from '../../shared/index.ts';
import { authedProcedure, publicProcedure, router } from '../trpc.ts';
import { addressKey } from '../accounts/ids.ts';
import { pageOf } from './paging.ts';

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
    .query(({ ctx, input }) => ctx.services.authorConsole.authorConsole(input.venueId, ctx.user)),

  addMembers: authedProcedure
    .input(AddMembersInput)
    .output(GroupMembersResult)
    .mutation(({ ctx, input }) => ctx.services.venue.addMembers(input, ctx.user)),

  saveInvitation: authedProcedure
    .input(InvitationInput)
    .output(InvitationView)
    .mutation(async ({ ctx, input }) => invitationView(await ctx.services.venue.saveInvitation(input, ctx.user))),

  invitations: authedProcedure
    .input(InvitationsQuery)
    .output(InvitationsResult)
    .query(async ({ ctx, input }) => ({ invitations: [invitationView(await ctx.services.venue.invitation(input.id, ctx.user))] })),

  postNote: authedProcedure
    .input(PostNoteInput)
    .output(Note)
    .mutation(({ ctx, input }) => ctx.services.notes.postNote(input, ctx.user)),

  postNoteEdit: authedProcedure
    .input(PostNoteEditInput)
    .output(PostedNoteEdit)
    .mutation(({ ctx, input }) => ctx.services.notes.postNoteEdit(input, ctx.user)),

  deleteNote: authedProcedure
    .input(DeleteNoteInput)
    .output(StatusResult)
    .mutation(({ ctx, input }) => ctx.services.notes.deleteNote(input.id, ctx.user)),

  notes: publicProcedure
    .input(NotesQuery)
    .output(NotesResult)
    .query(async ({ ctx, input }) => {
      const viewer = await ctx.optionalViewer();
      // Whose turn it is among lists waiting (`NoteService`'s gate): the person's, or a guest's
      // address as the rate limits count it (an IPv6 network, not each of its addresses).
      return ctx.services.notes.notes(input, viewer, viewer?.profileId ?? addressKey(ctx.origin.address));
    }),

  noteEdits: publicProcedure
    .input(NoteEditsQuery)
    .output(NoteEditsResult)
    .query(async ({ ctx, input }) => {
      const edits = await ctx.services.notes.edits(input, await ctx.optionalViewer());
      return { edits: edits.slice(0, input.limit ?? edits.length), count: edits.length };
    }),

  venues: publicProcedure
    .input(VenuesQuery)
    .output(VenuesResult)
    .query(async ({ ctx, input }) => ({ venues: await ctx.services.venue.venues(input) })),

  groups: publicProcedure
    .input(GroupsQuery)
    .output(GroupsResult)
    .query(async ({ ctx, input }) => {
      const groups = await ctx.services.venue.groups(input, await ctx.optionalViewer());
      // In id order (`VenueService.groups`), paged as notes are.
      return { groups: pageOf(groups, input, groups.length), count: groups.length };
    }),

  processLogs: publicProcedure
    .input(ProcessLogsQuery)
    .output(ProcessLogsResult)
    .query(async ({ ctx, input }) => ({ logs: await ctx.services.notes.processLogs(input.id, await ctx.optionalViewer()) })),
});
