// One CraftOS test scenario: a fake orchestrator plus the computer(s) booted against it, torn down together.
// Teardown returns the protocol violations the fake saw, so every test also checks the client's wire format.
import { findCraftos, startComputer, type Computer, type StartOptions } from './craftos.js';
import { FakeOrchestrator, type FakeOptions, type InvalidFrame } from './fake-orchestrator.js';

/** The emulator, or undefined (the tier is then skipped with the notice below). */
export const craftos = findCraftos();
if (!craftos) {
  console.log(
    '[lua-client.craftos] SKIPPED: CraftOS-PC not found (set CRAFTOS_PC_DIR or provide ../shared/craftos; ' +
      'see docs/lua-client.md)',
  );
}

/** A fake orchestrator and the computers started against it. */
export class Scenario {
  private computers: Computer[] = [];

  private constructor(public server: FakeOrchestrator) {}

  /** Start the fake orchestrator. */
  static async start(opts: FakeOptions = {}): Promise<Scenario> {
    return new Scenario(await FakeOrchestrator.start(opts));
  }

  /** Replace the fake orchestrator by one with other options (before booting). */
  async restartServer(opts: FakeOptions): Promise<void> {
    await this.server.close();
    this.server = await FakeOrchestrator.start(opts);
  }

  /** Boot a computer running `program` (Lua source). */
  boot(program: string, opts: StartOptions = {}): Computer {
    if (!craftos) throw new Error('CraftOS-PC not available');
    const c = startComputer(craftos, program, opts);
    this.computers.push(c);
    return c;
  }

  /** Stop everything; returns the invalid frames the server received. */
  async end(): Promise<InvalidFrame[]> {
    for (const c of this.computers) await c.stop();
    this.computers = [];
    const invalid = [...this.server.invalid];
    await this.server.close();
    return invalid;
  }
}
