/** Screen routes: a computer's mirrored screen (snapshot and live stream); read-only, a viewer may watch. */
import type { ScreenResponse } from '@ccagent/protocol';
import { HttpError, sendJson } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';

/** `GET /api/clients/:id/screen`: every row of the computer's screen as its mirror last sent it. */
export function getScreen(d: HttpApiOptions, { res, params }: RouteRequest): Promise<void> {
  const id = params['id']!;
  const screen = d.screens?.get(id);
  if (!screen) {
    throw new HttpError(
      404,
      'not_found',
      `no screen of ${id}: its screen mirror is off (set ccagent.screen true on the computer) or it has not connected since the server started`,
    );
  }
  const body: ScreenResponse = { screen };
  sendJson(res, 200, body);
  return Promise.resolve();
}

/** `GET /api/clients/:id/screen/stream`: the screen live (Server-Sent Events, see `ScreenHub.watch`). */
export function watchScreen(d: HttpApiOptions, { res, params }: RouteRequest): Promise<void> {
  if (!d.screens) throw new HttpError(404, 'not_found', 'this server keeps no screens');
  d.screens.watch(res, params['id']!);
  return Promise.resolve();
}
