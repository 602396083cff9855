/**
 * The origins of the services the tests started: only their answers are checked against the API
 * document, not those of the stand-ins a test starts for others (a mail or human-verification
 * server). A module of its own, so a test that starts no service never builds the document.
 */
export const serviceOrigins = new Set<string>();
