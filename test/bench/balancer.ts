/**
 * The load balancer of `npm run bench -- --processes N`: a round robin over the servers given
 * as arguments, listening on the port given first (the servers' `BASE_URL` names it), in a
 * process of its own so the bench's load generator does not share its CPU.
 *
 * Usage: node test/bench/balancer.ts <port> <server url>…
 */
import { startRoundRobin } from '../helpers/round-robin.ts';

const [port, ...targets] = process.argv.slice(2);
const balancer = await startRoundRobin(Number(port));
balancer.targets = targets;
console.log(`Listening on ${balancer.url}`);
process.once('SIGTERM', () => void balancer.close().then(() => process.exit(0)));
