// A real Minecraft Java server for tests: flying-squid (a server written in Node) in this child process, offline
// mode, superflat world, on 127.0.0.1. Started by `startTestServer` (src/testing) with the port and version as
// arguments; answers the parent's IPC queries about the world (player positions, blocks, chat) from the server side.
'use strict';
const mcServer = require('flying-squid');
const { Vec3 } = require('vec3');

const [port, version] = [Number(process.argv[2]), process.argv[3]];
const chat = [];
/** The entity uses (`use_entity`) each player's client sent, as the server received them. */
const used = [];
const serv = mcServer.createMCServer({
  motd: 'ccagent test server',
  port,
  host: '127.0.0.1',
  'max-players': 4,
  'online-mode': false,
  logging: false,
  gameMode: 1,
  difficulty: 0,
  generation: { name: 'superflat', options: { worldHeight: 80 } },
  kickTimeout: 10000,
  plugins: {},
  modpe: false,
  'view-distance': 2,
  'player-list-text': { header: { text: 'ccagent' }, footer: { text: 'test' } },
  'everybody-op': true,
  'max-entities': 10,
  version,
});
serv.on('newPlayer', (player) => {
  patchSpawnPacket(player);
  player.on('chat', (m) => {
    chat.push({ username: player.username, message: m.message });
  });
  player._client.on('use_entity', (p) => {
    const e = serv.entities[p.target];
    used.push({ username: player.username, target: p.target, mouse: p.mouse, name: e ? e.name : null });
  });
});
/**
 * flying-squid 1.11 writes an entity's spawn velocity as velocityX/Y/Z, while the protocol of minecraft-data 3.119
 * for 1.18.2 has one `velocity` (vec3i16) field in both spawn packets: `spawn_entity` (objects: the item a mined
 * block drops) and `spawn_entity_living` (mobs: a villager). The packet fails to serialize and the server drops the
 * player; a test that mines lost its bot at random. The server side is the test's fixture, not the system under
 * test: fill the field both ways before writing.
 */
function patchSpawnPacket(player) {
  const client = player._client;
  const write = client.write.bind(client);
  client.write = (name, params) => {
    if (
      (name === 'spawn_entity' || name === 'spawn_entity_living') &&
      params &&
      params.velocity === undefined &&
      params.velocityX !== undefined
    ) {
      if (process.env.CCAGENT_MC_DEBUG) console.log('spawn_entity', params.type, new Error().stack);
      params = { ...params, velocity: { x: params.velocityX, y: params.velocityY, z: params.velocityZ } };
    }
    return write(name, params);
  };
}
serv.on('error', (e) => process.send?.({ event: 'error', message: String(e && e.message) }));

const queries = {
  async player({ username }) {
    const p = serv.players.find((x) => x.username === username);
    return p ? { x: p.position.x, y: p.position.y, z: p.position.z } : null;
  },
  async block({ x, y, z }) {
    const b = await serv.overworld.getBlock(new Vec3(x, y, z));
    return b ? b.name : null;
  },
  async setBlock({ x, y, z, name }) {
    const id = serv.registry.blocksByName[name].defaultState;
    await serv.setBlock(serv.overworld, new Vec3(x, y, z), id);
    return true;
  },
  async chat() {
    return chat;
  },
  /**
   * Spawn a living entity (`villager`, `cow`…) at x y z; answers its entity id. flying-squid's spawnMob looks the
   * type up in the registry's `mobs`, which for 1.18.2 holds only the 8 entities typed 'mob' (a villager is
   * 'passive'), so the entity is added there first.
   */
  async spawnEntity({ name, x, y, z }) {
    const e = serv.registry.entitiesByName[name];
    if (!e) throw new Error(`no entity named ${name}`);
    if (!serv.registry.mobs[e.id]) serv.registry.mobs[e.id] = e;
    return serv.spawnMob(e.id, serv.overworld, new Vec3(x, y, z)).id;
  },
  /** Where an entity is on the server, or null when it is gone. */
  async entity({ entityId }) {
    const e = serv.entities[entityId];
    return e ? { name: e.name, x: e.position.x, y: e.position.y, z: e.position.z } : null;
  },
  /** The entity uses the server received from players, in order. */
  async entityUses() {
    return used;
  },
  async players() {
    return serv.players.map((p) => p.username);
  },
};
process.on('message', (msg) => {
  const fn = queries[msg.q];
  if (!fn) return process.send({ id: msg.id, error: `unknown query ${msg.q}` });
  fn(msg).then(
    (result) => process.send({ id: msg.id, result }),
    (e) => process.send({ id: msg.id, error: String(e && e.message) }),
  );
});
serv.on('ready', () => process.send({ event: 'ready', port }));
process.on('disconnect', () => process.exit(0));
