import { AppError } from '../../shared/index.ts';
import type { Provider } from './provider.ts';

/** The applications a person has let sign them in, and with which scopes. */
export function consents(p: Provider, profileId: string) {
  return p.repo.consentsOf(profileId);
}

/** Withdrawing a consent ends what it allowed: the person's tokens and unused codes at that client. */
export async function withdrawConsent(p: Provider, profileId: string, clientId: string): Promise<void> {
  const now = p.now();
  await p.repo.transaction(async (repo) => {
    if (!(await repo.deleteConsent(profileId, clientId))) throw new AppError('NotFoundError', `Consent Not Found: ${clientId}`);
    await repo.revokeGrants(profileId, clientId, now);
  });
}
