/**
 * The server's word on each computer's screen mirror (issue 36 item 3): `true` on, `false` off, or no opinion.
 *
 * Where it comes from, the first that says something: an operator's switch (`POST /api/clients/:id/screen/switch`,
 * kept in a settings document: a file beside a SQLite database, a row of PostgreSQL's settings table), the config
 * file's `server.screen.computers[id]`, then `server.screen.default`. It is sent to the computer in its `welcome`
 * and, on a change, as `screen_switch`.
 *
 * How it combines with the computer's own setting (`ccagent.screen`, `"screen"` in its config, `--screen`): the
 * mirror runs when neither side says off and one says on. Off wins on either side: the player's local choice keeps
 * a screen private whatever the server says, and an operator can always stop receiving a screen (its frames are
 * refused and neither kept nor shown). On wins over no opinion, so one setting on either side turns it on.
 *
 * A change is durable before it is acknowledged (the promise of {@link ScreenSwitches.set} resolves) and only then
 * seen by readers and sent to the computer; changes are saved one at a time, in order.
 */
import { z } from 'zod';

/** Where the switches are kept (`load` answers null when nothing was saved; `save` resolves once durable). */
export interface ScreenSwitchStore {
  load(): Promise<unknown>;
  save(doc: unknown): Promise<void>;
}

/** The config file's part (`server.screen`). */
export interface ScreenConfig {
  default?: boolean | undefined;
  computers: Record<string, boolean>;
}

/** What the server says about one computer, and why. */
export interface ScreenSwitchView {
  client_id: string;
  /** The operator's switch, or null. */
  switch: boolean | null;
  /** The config file's word, or null. */
  configured: boolean | null;
  /** What the computer is told: the switch, else the config file's, else null (no opinion). */
  server: boolean | null;
}

const DocSchema = z.object({ computers: z.record(z.string(), z.boolean()).default({}) });

/** See the module comment. */
export class ScreenSwitches {
  private switches = new Map<string, boolean>();
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly config: ScreenConfig,
    private readonly store: ScreenSwitchStore | undefined,
    /** Called after a change is durable, with the computer's new word (send it, drop a screen switched off). */
    private readonly changed: (clientId: string, server: boolean | null) => void = () => undefined,
  ) {}

  /** Read the saved switches (startup); a document that does not parse is an error, never silently ignored. */
  async load(): Promise<void> {
    const raw = this.store ? await this.store.load() : null;
    if (raw === null || raw === undefined) return;
    const doc = DocSchema.parse(raw);
    this.switches = new Map(Object.entries(doc.computers));
  }

  /** What the server says about `clientId`: true on, false off, undefined no opinion. */
  server(clientId: string): boolean | undefined {
    return this.switches.get(clientId) ?? this.configured(clientId);
  }

  /** The whole picture for one computer (the HTTP answer). */
  view(clientId: string): ScreenSwitchView {
    const sw = this.switches.get(clientId);
    const cfg = this.configured(clientId);
    return {
      client_id: clientId,
      switch: sw ?? null,
      configured: cfg ?? null,
      server: sw ?? cfg ?? null,
    };
  }

  /** Set (true/false) or clear (null) the operator's switch of `clientId`; resolves once it is durable. */
  set(clientId: string, value: boolean | null): Promise<ScreenSwitchView> {
    const run = this.chain.then(async () => {
      const next = new Map(this.switches);
      if (value === null) next.delete(clientId);
      else next.set(clientId, value);
      if (this.store) await this.store.save({ computers: Object.fromEntries(next) });
      this.switches = next;
      this.changed(clientId, this.server(clientId) ?? null);
      return this.view(clientId);
    });
    this.chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private configured(clientId: string): boolean | undefined {
    return Object.hasOwn(this.config.computers, clientId)
      ? this.config.computers[clientId]
      : this.config.default;
  }
}
