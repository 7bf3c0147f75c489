/**
 * A webhook token with a forged signature: one character of its signature replaced by another,
 * so the forgery never equals the token (a fixed suffix such as `AA` does, when the signature
 * happens to end with it: once in 256 tokens, since the last character carries only two bits).
 */
export function forgeSignature(token: string): string {
  const i = token.length - 3;
  return `${token.slice(0, i)}${token[i] === 'A' ? 'B' : 'A'}${token.slice(i + 1)}`;
}
