/**
 * `@ccagent/ollama`: the package's former name, kept so that code written against it goes on working. Everything it
 * held — the provider-neutral `ChatModel` port, the Ollama and OpenAI-compatible adapters, the model-server pool — is
 * `@ccagent/models` now; this entry re-exports it unchanged. New code imports `@ccagent/models`.
 */
export * from '@ccagent/models';
