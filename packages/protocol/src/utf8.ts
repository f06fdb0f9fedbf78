/**
 * UTF-8 byte length of a JavaScript string, counting a lone surrogate as 3 bytes (as `TextEncoder` encodes it
 * to U+FFFD). Stops counting once the length exceeds `stopAbove`, so oversize input costs at most that much work.
 */
export function utf8ByteLength(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else bytes += 3;
    if (bytes > stopAbove) return bytes;
  }
  return bytes;
}

/**
 * True when the UTF-8 encoding of `text` is at most `maxBytes` long. Decided from `text.length` alone when it can be
 * (a UTF-16 code unit takes 1 to 3 bytes, a surrogate pair 4), so a typical small frame is not scanned at all.
 */
export function fitsUtf8(text: string, maxBytes: number): boolean {
  if (text.length * 3 <= maxBytes) return true;
  if (text.length > maxBytes) return false;
  return utf8ByteLength(text, maxBytes) <= maxBytes;
}

/** True for a UTF-16 low (trailing) surrogate code unit. */
export function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/** True for a UTF-16 high (leading) surrogate code unit. */
export function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}
