/**
 * The string with one character changed, always to a different one. A forged value built by
 * overwriting a random string's tail with fixed characters is, now and then, the same value (a
 * secret that already ends in the character written), and a test that asserts a refusal fails
 * at random. `at` counts from the end; the default -2 avoids a base64 string's last character,
 * whose low bits a decoder may ignore.
 */
export function tampered(value: string, at = -2): string {
  const i = value.length + at;
  const next = value[i] === 'A' ? 'B' : 'A';
  return `${value.slice(0, i)}${next}${value.slice(i + 1)}`;
}
