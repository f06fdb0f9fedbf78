import { isModelError, type ModelError } from '../../src/model-error.js';

/**
 * Await a model call that must fail and return its `ModelError`. A call that succeeds, or throws anything other than a
 * `ModelError`, fails the test: a typed error is the contract under test.
 */
export async function failure(promise: Promise<unknown>): Promise<ModelError> {
  try {
    await promise;
  } catch (error) {
    if (isModelError(error)) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}
