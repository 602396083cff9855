import type { Knex } from 'knex';
import * as createProfiles from './20261122000000_create_profiles.ts';
import * as createGroups from './20261122000100_create_groups.ts';
import * as createSessions from './20261122000200_create_sessions.ts';
import * as createTokens from './20261122000300_create_tokens.ts';
import * as createSettings from './20261122000400_create_settings.ts';
import * as accountsLifecycle from './20261122010000_accounts_lifecycle.ts';
import * as createVenues from './20261122020000_create_venues.ts';
import * as createChunkedUploads from './20261122030000_create_chunked_uploads.ts';
import * as createOidc from './20261122040000_create_oidc.ts';
import * as oidcTokenVersion from './20261123000000_oidc_token_version.ts';
import * as accountsHardening from './20261123003000_accounts_hardening.ts';
import * as assemblyOwner from './20261123010000_assembly_owner.ts';
import * as textWithoutLengthLimits from './20261123090000_text_without_length_limits.ts';
import * as noteDeletion from './20261123020000_note_deletion.ts';
import * as shareUploadProgress from './20261123100000_share_upload_progress.ts';
import * as createInstallState from './20261123110000_create_install_state.ts';
import * as oneTokenPerCode from './20261124010000_one_token_per_code.ts';
import * as createMfa from './20261124020000_create_mfa.ts';
import * as createPasskeys from './20261124030000_create_passkeys.ts';
import * as sessionDevices from './20261124040000_session_devices.ts';
import * as profileLinks from './20261124060000_profile_links_are_web_addresses.ts';
import * as arrivalsHeldByAProcess from './20261125100000_arrivals_held_by_a_process.ts';
import * as oidcConfidentialClients from './20261125200000_oidc_confidential_clients.ts';
import * as securityActivity from './20261126040000_security_activity.ts';
import * as createAccountDeletions from './20261126020000_create_account_deletions.ts';
import * as createMailOutbox from './20261126060000_create_mail_outbox.ts';
import * as createTusUploads from './20261126070000_create_tus_uploads.ts';
import * as oidcResourceServers from './20261126080000_oidc_resource_servers.ts';
import * as tusSpans from './20261126090000_tus_spans.ts';
import * as tusS3Spans from './20261126130000_tus_s3_spans.ts';
import * as refreshRevokedFamilies from './20261126150000_refresh_revoked_families.ts';
import * as sessionRotationInOneStatement from './20261127010000_session_rotation_in_one_statement.ts';
import * as sealedAuthorizationCodes from './20261127030000_sealed_authorization_codes.ts';
import * as refreshRotationStoresItsAccessToken from './20261127100000_refresh_rotation_stores_its_access_token.ts';
import * as chunkRecordCountsItself from './20261127200000_chunk_record_counts_itself.ts';
import * as usernameSearchKey from './20261129000000_username_search_key.ts';
import * as oidcDeviceCodes from './20261129100000_oidc_device_codes.ts';
import * as oidcClientApprovedByToken from './20261129200000_oidc_client_approved_by_token.ts';
import * as oidcPushedRequests from './20261129210000_oidc_pushed_requests.ts';
import * as tusFinalOnce from './20261129220000_tus_final_once.ts';
import * as signInAlertAddress from './20261129230000_sign_in_alert_address.ts';
import * as textColumnsAgain from './20261129233000_text_columns_again.ts';

export interface Migration {
  name: string;
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}

/** Every migration, oldest first. A new one is a new file and one more line here. */
export const migrations: Migration[] = [
  { name: '20261122000000_create_profiles', ...createProfiles },
  { name: '20261122000100_create_groups', ...createGroups },
  { name: '20261122000200_create_sessions', ...createSessions },
  { name: '20261122000300_create_tokens', ...createTokens },
  { name: '20261122000400_create_settings', ...createSettings },
  { name: '20261122010000_accounts_lifecycle', ...accountsLifecycle },
  { name: '20261122020000_create_venues', ...createVenues },
  { name: '20261122030000_create_chunked_uploads', ...createChunkedUploads },
  { name: '20261122040000_create_oidc', ...createOidc },
  { name: '20261123000000_oidc_token_version', ...oidcTokenVersion },
  { name: '20261123003000_accounts_hardening', ...accountsHardening },
  { name: '20261123010000_assembly_owner', ...assemblyOwner },
  { name: '20261123020000_note_deletion', ...noteDeletion },
  { name: '20261123090000_text_without_length_limits', ...textWithoutLengthLimits },
  { name: '20261123100000_share_upload_progress', ...shareUploadProgress },
  { name: '20261123110000_create_install_state', ...createInstallState },
  { name: '20261124010000_one_token_per_code', ...oneTokenPerCode },
  { name: '20261124020000_create_mfa', ...createMfa },
  { name: '20261124030000_create_passkeys', ...createPasskeys },
  { name: '20261124040000_session_devices', ...sessionDevices },
  { name: '20261124060000_profile_links_are_web_addresses', ...profileLinks },
  { name: '20261125100000_arrivals_held_by_a_process', ...arrivalsHeldByAProcess },
  { name: '20261125200000_oidc_confidential_clients', ...oidcConfidentialClients },
  { name: '20261126040000_security_activity', ...securityActivity },
  { name: '20261126020000_create_account_deletions', ...createAccountDeletions },
  { name: '20261126060000_create_mail_outbox', ...createMailOutbox },
  { name: '20261126070000_create_tus_uploads', ...createTusUploads },
  { name: '20261126080000_oidc_resource_servers', ...oidcResourceServers },
  { name: '20261126090000_tus_spans', ...tusSpans },
  { name: '20261126130000_tus_s3_spans', ...tusS3Spans },
  { name: '20261126150000_refresh_revoked_families', ...refreshRevokedFamilies },
  { name: '20261127010000_session_rotation_in_one_statement', ...sessionRotationInOneStatement },
  { name: '20261127030000_sealed_authorization_codes', ...sealedAuthorizationCodes },
  { name: '20261127100000_refresh_rotation_stores_its_access_token', ...refreshRotationStoresItsAccessToken },
  { name: '20261127200000_chunk_record_counts_itself', ...chunkRecordCountsItself },
  { name: '20261129000000_username_search_key', ...usernameSearchKey },
  { name: '20261129100000_oidc_device_codes', ...oidcDeviceCodes },
  { name: '20261129200000_oidc_client_approved_by_token', ...oidcClientApprovedByToken },
  { name: '20261129210000_oidc_pushed_requests', ...oidcPushedRequests },
  { name: '20261129220000_tus_final_once', ...tusFinalOnce },
  { name: '20261129230000_sign_in_alert_address', ...signInAlertAddress },
  { name: '20261129233000_text_columns_again', ...textColumnsAgain },
];
