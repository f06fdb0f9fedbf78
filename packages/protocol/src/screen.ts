/**
 * The computer's screen, mirrored: the `screen_frame` message a Lua host sends when its screen mirror is on, and the
 * records the HTTP side serves from it (`GET /api/clients/:id/screen`, its event stream). A frame carries rows in
 * CC's `blit` form: the text, and one hex digit per cell for the text and background colour (`0` white … `f` black,
 * CC's 16-colour palette). A `full` frame carries every row and replaces the screen; the others carry only the rows
 * that changed since the previous frame of the same connection.
 */
import { z } from 'zod';

/** Widest screen a frame may describe (CC computers are 51, pockets 26, turtles 39; CraftOS-PC can be resized). */
export const SCREEN_MAX_WIDTH = 256;
/** Tallest screen a frame may describe. */
export const SCREEN_MAX_HEIGHT = 128;
/** Fastest rate a host sends frames at (frames per second); the server forwards no faster either. */
export const SCREEN_MAX_FPS = 10;
/** The 16 colour digits of a blit row, `0` (white) to `f` (black). */
export const SCREEN_COLOUR_DIGITS = '0123456789abcdef';

/** CC's default palette, by colour digit (`0` white … `f` black), as 0xRRGGBB. */
export const CC_DEFAULT_PALETTE: readonly number[] = [
  0xf0f0f0, 0xf2b233, 0xe57fd8, 0x99b2f2, 0xdede6c, 0x7fcc19, 0xf2b2cc, 0x4c4c4c, 0x999999, 0x4c99b2,
  0xb266e5, 0x3366cc, 0x7f664c, 0x57a64e, 0xcc4c4c, 0x111111,
];

const COLOUR_ROW = /^[0-9a-f]*$/;
// CC's characters are bytes: a row's text is one code point per cell, each U+0000–U+00FF (the host sends bytes
// 128–255 as their Latin-1 code points).
const TEXT_ROW = /^[^\u0100-\uffff]*$/;

/** One row of a frame, in blit form. */
export const ScreenLineSchema = z.strictObject({
  y: z.number().int().min(1).max(SCREEN_MAX_HEIGHT).describe('Row number, 1 at the top.'),
  text: z
    .string()
    .max(SCREEN_MAX_WIDTH)
    .regex(TEXT_ROW, 'one character (U+0000–U+00FF) per cell')
    .describe('The row’s characters, one per cell (`width` of them).'),
  fg: z
    .string()
    .max(SCREEN_MAX_WIDTH)
    .regex(COLOUR_ROW, 'one colour digit 0-9a-f per cell')
    .describe('Text colour of each cell, one hex digit (`0` white … `f` black).'),
  bg: z
    .string()
    .max(SCREEN_MAX_WIDTH)
    .regex(COLOUR_ROW, 'one colour digit 0-9a-f per cell')
    .describe('Background colour of each cell, one hex digit.'),
});

/** Where the cursor is and whether it blinks. */
export const ScreenCursorSchema = z.strictObject({
  x: z
    .number()
    .int()
    .min(-SCREEN_MAX_WIDTH)
    .max(2 * SCREEN_MAX_WIDTH)
    .describe('Column, 1 at the left (may be off screen).'),
  y: z
    .number()
    .int()
    .min(-SCREEN_MAX_HEIGHT)
    .max(2 * SCREEN_MAX_HEIGHT)
    .describe('Row, 1 at the top (may be off screen).'),
  blink: z.boolean().describe('Whether the cursor is shown (blinking).'),
  fg: z
    .string()
    .regex(/^[0-9a-f]$/)
    .optional()
    .describe('The text colour the cursor is drawn in (the current text colour).'),
});

/** The 16 palette colours (0xRRGGBB), by colour digit `0`…`f`. */
export const ScreenPaletteSchema = z
  .array(z.number().int().min(0).max(0xffffff))
  .length(16)
  .describe('The 16 palette colours as 0xRRGGBB integers, by colour digit `0`…`f`.');

/** What a frame says about the screen, shared by `screen_frame` and the HTTP records. */
const frameShape = {
  width: z.number().int().min(1).max(SCREEN_MAX_WIDTH).describe('Columns.'),
  height: z.number().int().min(1).max(SCREEN_MAX_HEIGHT).describe('Rows.'),
  full: z
    .boolean()
    .describe(
      'Every row is here and replaces the screen (on connect, on resize); else only the changed rows.',
    ),
  cursor: ScreenCursorSchema,
  palette: ScreenPaletteSchema.optional(),
  lines: z.array(ScreenLineSchema).max(SCREEN_MAX_HEIGHT).describe('The rows this frame carries.'),
};

/** The checks a frame's rows must pass against its size; shared by the message and the records. */
function checkRows(
  f: {
    width: number;
    height: number;
    full: boolean;
    lines: { y: number; text: string; fg: string; bg: string }[];
  },
  ctx: z.RefinementCtx,
): void {
  const seen = new Set<number>();
  f.lines.forEach((l, i) => {
    if (l.y > f.height) {
      ctx.addIssue({
        code: 'custom',
        path: ['lines', i, 'y'],
        message: `row ${l.y} is below the screen (height ${f.height})`,
      });
    }
    if (seen.has(l.y))
      ctx.addIssue({ code: 'custom', path: ['lines', i, 'y'], message: `row ${l.y} appears twice` });
    seen.add(l.y);
    for (const k of ['text', 'fg', 'bg'] as const) {
      if (l[k].length !== f.width) {
        ctx.addIssue({
          code: 'custom',
          path: ['lines', i, k],
          message: `must have exactly ${f.width} characters (the width), not ${l[k].length}`,
        });
      }
    }
  });
  if (f.full && f.lines.length !== f.height) {
    ctx.addIssue({
      code: 'custom',
      path: ['lines'],
      message: `a full frame carries all ${f.height} rows, not ${f.lines.length}`,
    });
  }
}

/** `screen_frame`: the computer's screen, or the rows of it that changed (only when its screen mirror is on). */
export const ScreenFrameSchema = z
  .object({
    type: z.literal('screen_frame'),
    seq: z.number().int().min(0).describe('Frame number on this connection, counting up from 0.'),
    ...frameShape,
  })
  .superRefine(checkRows);

/** A screen as the HTTP side serves it: a frame (`full` for the snapshot), the computer and when it changed. */
export const HttpScreenSchema = z
  .object({
    client_id: z.string().describe('The computer.'),
    connected: z.boolean().describe('Whether the computer is connected now (else this is its last screen).'),
    updated_at: z.number().describe('When the screen last changed (epoch ms, server clock).'),
    frames: z
      .number()
      .int()
      .min(0)
      .describe('Frames the server has received from this computer since it started.'),
    ...frameShape,
  })
  .superRefine(checkRows);

/** `GET /api/clients/:id/screen`. */
export const ScreenResponseSchema = z.object({ screen: HttpScreenSchema });

/** `screen_frame` message. */
export type ScreenFrameMessage = z.infer<typeof ScreenFrameSchema>;
/** One blit row. */
export type ScreenLine = z.infer<typeof ScreenLineSchema>;
/** The cursor of a screen. */
export type ScreenCursor = z.infer<typeof ScreenCursorSchema>;
/** A screen (or its changed rows) as the HTTP side serves it. */
export type HttpScreen = z.infer<typeof HttpScreenSchema>;
/** `GET /api/clients/:id/screen` body. */
export type ScreenResponse = z.infer<typeof ScreenResponseSchema>;

/**
 * What the server says about a computer's screen mirror: `true` on, `false` off (its frames are refused), `null` no
 * opinion (the computer's own setting decides). The mirror runs when neither side says off and one says on.
 */
const ServerScreenSchema = z
  .boolean()
  .nullable()
  .describe(
    'The server’s word on this computer’s screen mirror: `true` on, `false` off (frames are refused), `null` no opinion (the computer’s own `ccagent.screen` decides). Off on either side wins.',
  );

/** `screen_switch`: the operator changed the server's word on this computer's screen mirror (sent at once). */
export const ScreenSwitchSchema = z.object({
  type: z.literal('screen_switch'),
  screen: ServerScreenSchema,
});

/** `POST /api/clients/:id/screen/switch` body. */
export const ScreenSwitchBodySchema = z.strictObject({
  screen: z
    .boolean()
    .nullable()
    .describe(
      '`true` on, `false` off, `null` clear this computer’s switch (the config file’s `server.screen` applies again).',
    ),
});

/** `GET`/`POST /api/clients/:id/screen/switch` response. */
export const ScreenSwitchResponseSchema = z.object({
  client_id: z.string().describe('The computer.'),
  switch: z
    .boolean()
    .nullable()
    .describe('What an operator set for this computer (stored in the database), or `null`.'),
  configured: z
    .boolean()
    .nullable()
    .describe(
      'What the config file says (`server.screen.computers`, else `server.screen.default`), or `null`.',
    ),
  server: ServerScreenSchema,
});

/** `screen_switch` message. */
export type ScreenSwitchMessage = z.infer<typeof ScreenSwitchSchema>;
/** `POST /api/clients/:id/screen/switch` body. */
export type ScreenSwitchBody = z.infer<typeof ScreenSwitchBodySchema>;
/** `/api/clients/:id/screen/switch` response. */
export type ScreenSwitchResponse = z.infer<typeof ScreenSwitchResponseSchema>;
