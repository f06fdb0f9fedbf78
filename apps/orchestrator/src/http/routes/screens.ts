/**
 * Screen routes: a computer's mirrored screen (snapshot and live stream; read-only, a viewer may watch), and the
 * server's switch of it (read by whoever may read the clients, set by an operator).
 */
import { ScreenSwitchBodySchema, type ScreenResponse, type ScreenSwitchResponse } from '@ccagent/protocol';
import { HttpError, parseWith, readJson, sendJson } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';

/** `GET /api/clients/:id/screen`: every row of the computer's screen as its mirror last sent it. */
export function getScreen(d: HttpApiOptions, { res, params }: RouteRequest): Promise<void> {
  const id = params['id']!;
  const screen = d.screens?.get(id);
  if (!screen) {
    throw new HttpError(
      404,
      'not_found',
      `no screen of ${id}: its screen mirror is off (on the computer: set ccagent.screen true; at the server: an operator's switch or server.screen) or it has not connected since the server started`,
    );
  }
  const body: ScreenResponse = { screen };
  sendJson(res, 200, body);
  return Promise.resolve();
}

/** `GET /api/clients/:id/screen/stream`: the screen live (Server-Sent Events, see `ScreenHub.watch`). */
export function watchScreen(d: HttpApiOptions, { res, params }: RouteRequest): Promise<void> {
  if (!d.screens) throw new HttpError(404, 'not_found', 'this server keeps no screens');
  const id = params['id']!;
  if (d.screenSwitches?.server(id) === false) {
    throw new HttpError(409, 'screen_off', `the screen mirror of ${id} is off at the server`);
  }
  const r = d.screens.watch(res, id);
  if (!r.ok) throw new HttpError(429, 'too_many_viewers', r.message, undefined, { 'retry-after': '5' });
  return Promise.resolve();
}

function switches(d: HttpApiOptions): NonNullable<HttpApiOptions['screenSwitches']> {
  if (!d.screenSwitches) throw new HttpError(404, 'not_found', 'this server keeps no screen switches');
  return d.screenSwitches;
}

/** `GET /api/clients/:id/screen/switch`: the server's word on the computer's mirror, and where it comes from. */
export function getScreenSwitch(d: HttpApiOptions, { res, params }: RouteRequest): Promise<void> {
  const body: ScreenSwitchResponse = switches(d).view(params['id']!);
  sendJson(res, 200, body);
  return Promise.resolve();
}

/** `POST /api/clients/:id/screen/switch`: set or clear the operator's switch; answered once it is durable. */
export async function setScreenSwitch(d: HttpApiOptions, { req, res, params }: RouteRequest): Promise<void> {
  const sw = switches(d);
  const id = params['id']!;
  if (!/^[A-Za-z0-9._:@+-]{1,200}$/.test(id)) {
    throw new HttpError(400, 'invalid_field', 'not a client id (letters, digits and . _ - : @ +)', '$.id');
  }
  const b = parseWith(ScreenSwitchBodySchema, await readJson(req), 'body');
  const body: ScreenSwitchResponse = await sw.set(id, b.screen);
  sendJson(res, 200, body);
}
