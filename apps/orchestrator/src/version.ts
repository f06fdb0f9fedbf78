/** Version of cc-orchestrator (reported by `/health`, `welcome` and `--version`); a test keeps it equal to package.json's. */
export const ORCHESTRATOR_VERSION = '0.1.0';
