import type { Request } from 'express';
import type { createCaller } from '../router.ts';

type Caller = ReturnType<typeof createCaller>;

/** One REST route: its method and path, and the procedure it calls with the input it builds. */
export interface Route {
  method: 'get' | 'post' | 'put' | 'delete';
  path: string;
  /** Builds the procedure's input from the request and calls the same procedure a tRPC client would. */
  call(caller: Caller, req: Request): Promise<unknown>;
}

/**
 * The REST route table: every path the spec (and the README's additions) define, one line each.
 * Paths are literal or have one named parameter, so no two routes overlap and order never matters.
 */
export const routes: Route[] = [
  { method: 'post', path: '/register', call: (c, req) => c.accounts.register(req.body) },
  { method: 'post', path: '/login', call: (c, req) => c.accounts.login(req.body) },
  { method: 'post', path: '/refreshToken', call: (c) => c.accounts.refreshToken() },
  { method: 'post', path: '/logout', call: (c) => c.accounts.logout() },
  { method: 'post', path: '/logout-all-devices', call: (c) => c.accounts.logoutOtherDevices() },
  { method: 'get', path: '/profiles', call: (c, req) => c.accounts.profiles(req.query) },
  { method: 'get', path: '/tildeusername', call: (c, req) => c.accounts.tildeUsername(req.query) },
];
