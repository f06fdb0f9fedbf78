/**
 * `@ccagent/security/testing`: the contract suite every `CredentialStore` implementation runs. Not part of the
 * runtime API (`@ccagent/security`): it imports vitest (an optional peer dependency), so it lives behind its own
 * subpath export and is only loaded by test files.
 */
export { runCredentialStoreContract, type CredentialStoreFactory } from './credential-store-contract.js';
