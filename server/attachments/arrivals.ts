/**
 * `ChunkArrivals`: the chunk requests under way, noted in the database where every process sees
 * them, so that the request completing an upload answers only once the chunks sent together with
 * it are in, whichever process receives them (then every one of them answers the URL). Each note
 * is held by a lease of the uploads service that made it, so a process stopped mid-chunk holds
 * nobody up. A part of `ChunkedUploadsService` (chunked-uploads.ts), made by it with its lease holder.
 */
import type { Logger } from 'pino';
import { LEASE_RENEW_MS, OTHER_PROCESS_POLL_MS, sleep, WAIT_FOR_OTHER_PROCESS_MS } from './lease-timing.ts';
import { ownerIsGone } from './owners.ts';
import type { AttachmentsRepository } from './repository.ts';

/**
 * A chunk request under way is noted in the database with a lease of its process, renewed every
 * `LEASE_RENEW_MS` while the request runs: one not renewed for `ARRIVAL_LEASE_MS` was cut by a
 * stop of its process, on whatever machine, and is no longer waited for. (One whose holder is a
 * stopped process of this kernel is not waited for at all: see owners.ts.)
 */
const ARRIVAL_LEASE_MS = 15_000;

type ArrivalsRepository = Pick<AttachmentsRepository, 'arrive' | 'renewArrivals' | 'leave' | 'holdersStillArriving' | 'arrivalHolders' | 'sweepArrivals'>;

export class ChunkArrivals {
  readonly #repo: ArrivalsRepository;
  readonly #holder: string;
  readonly #logger: Logger;
  readonly #now: () => number;
  /** The chunk requests under way in this service, whose lease it renews (`arrive`). */
  readonly #arrivals = new Set<string>();
  #renewal: NodeJS.Timeout | undefined;

  constructor(deps: { repo: ArrivalsRepository; holder: string; logger: Logger; now: () => number }) {
    this.#repo = deps.repo;
    this.#holder = deps.holder;
    this.#logger = deps.logger;
    this.#now = deps.now;
  }

  /** Notes a chunk request as under way, held by this service's lease until `leave`. */
  async arrive(id: string, profileId: string, clientUploadId: string): Promise<void> {
    const now = this.#now();
    await this.#repo.arrive({ id, profileId, clientUploadId, holder: this.#holder }, now, now + ARRIVAL_LEASE_MS);
    this.#arrivals.add(id);
    this.#renewal ??= setInterval(() => {
      this.#repo.renewArrivals([...this.#arrivals], this.#now() + ARRIVAL_LEASE_MS).catch((error: unknown) => this.#logger.warn({ err: error }, 'chunk arrivals not renewed'));
    }, LEASE_RENEW_MS).unref();
  }

  async leave(id: string): Promise<void> {
    this.#arrivals.delete(id);
    if (this.#arrivals.size === 0 && this.#renewal) {
      clearInterval(this.#renewal);
      this.#renewal = undefined;
    }
    await this.#repo.leave(id);
  }

  /**
   * Waits until none of `others` (the other chunk requests of the upload under way when this one
   * read where it stands: `AttachmentsRepository.standing`) still is, in any process, or a minute
   * has passed. True when there was one (not of a stopped process): where the upload stands is
   * then worth reading again, even if it was done before the first look (its chunk may have been
   * recorded, and the file assembled, after this one read).
   */
  async awaitOthers(others: ReadonlyArray<{ id: string; holder: string }>): Promise<boolean> {
    // Only the requests under way then were sent together with this one: a chunk arriving later
    // sees this one's chunk recorded, and waiting for it too would let a client that keeps
    // sending hold this answer back until the deadline.
    // A request whose process stopped (its holder gone, or its lease run out) is not waited for.
    const together = others.filter((other) => !ownerIsGone(other.holder)).map((other) => other.id);
    const stillArriving = async () => (await this.#repo.holdersStillArriving(together, this.#now())).some((holder) => !ownerIsGone(holder));
    if (together.length === 0) return false;
    const deadline = performance.now() + WAIT_FOR_OTHER_PROCESS_MS;
    while ((await stillArriving()) && performance.now() < deadline) await sleep(OTHER_PROCESS_POLL_MS);
    return true;
  }

  /** Forgets chunk requests whose process stopped: their lease ran out, or their holder is a stopped process of this kernel. */
  async sweep(): Promise<void> {
    const gone = (await this.#repo.arrivalHolders()).filter((holder) => ownerIsGone(holder));
    await this.#repo.sweepArrivals(this.#now(), gone);
  }
}
