// The groups whose members hold a role across the whole install.

/** Members of this group may do anything; the operator CLI adds them (`--role superuser`). */
export const SUPER_USERS_GROUP = 'Service/Superusers';
/** Members of this group decide on profiles; the operator CLI adds them (`--role moderator`). */
export const MODERATORS_GROUP = 'Service/Moderators';
