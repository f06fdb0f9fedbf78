export { startServer, ORCHESTRATOR_VERSION, type ServerOptions, type RunningServer } from './server.js';
export { defaultDbPath } from './paths.js';
