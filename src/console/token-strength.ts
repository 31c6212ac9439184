// How many guesses a console token would take, estimated the way a guesser works: common words, runs such as
// `abcd` or `1234`, and parts repeated from earlier in the token cost a guesser a few bits each, not the bits of
// their letters. Only random characters count in full. A simplified form of the pattern matching of zxcvbn
// (Wheeler, USENIX Security 2016), enough to refuse `changeme-changeme-…` or `admin-token-0123456789abcdef…`
// while any token made by a random generator (openssl rand, a UUID, a password manager) passes easily.

/** Words people put in tokens, and keyboard rows; each costs a guesser one pick among a short list, whatever its length. */
const COMMON_WORDS = [
  'access',
  'admin',
  'administrator',
  'api',
  'bearer',
  'changeme',
  'console',
  'default',
  'dragon',
  'example',
  'football',
  'hello',
  'iloveyou',
  'key',
  'letmein',
  'local',
  'localhost',
  'login',
  'master',
  'monkey',
  'pass',
  'passwd',
  'password',
  'payhooks',
  'private',
  'prod',
  'production',
  'qwerty',
  'qwertyuiop',
  'asdfghjkl',
  'zxcvbnm',
  'root',
  'secret',
  'staging',
  'sunshine',
  'test',
  'token',
  'trustno1',
  'webhook',
  'welcome',
] as const;

/** One pick of a word (about 40 words and rows, each in a few cases). */
const WORD_BITS = 8;
/** A part repeated from earlier in the token: where it starts and how long it is. */
const REPEAT_BITS = 6;
/** A run of characters one step apart (`abcd`, `9876`) or equal (`aaaa`): its first character and direction. */
const RUN_BITS = 6;
/** Shorter words, repeats and runs are counted as random characters. */
const MIN_PATTERN_LENGTH = 3;

/**
 * The estimated bits of a token: how many yes/no guesses a guesser who knows common words, runs and repeats
 * would need. Random characters count log2 of the size of the character classes the token uses.
 *
 * @example
 * estimateTokenBits('changeme-changeme-changeme-changeme') // about 20
 * estimateTokenBits(randomBytes(32).toString('base64url')) // about 250
 */
export function estimateTokenBits(token: string): number {
  const lower = token.toLowerCase();
  const perCharacter = Math.log2(alphabetSize(token));
  let bits = 0;
  for (let at = 0; at < lower.length; ) {
    const pattern = longestPattern(lower, at);
    if (pattern.length >= MIN_PATTERN_LENGTH) {
      bits += pattern.bits;
      at += pattern.length;
    } else {
      bits += perCharacter;
      at += 1;
    }
  }
  return bits;
}

/** The size of the character classes a token draws from: lower case, upper case, digits, other printable ASCII. */
function alphabetSize(token: string): number {
  const classes: [RegExp, number][] = [
    [/[a-z]/, 26],
    [/[A-Z]/, 26],
    [/[0-9]/, 10],
    [/[^a-zA-Z0-9]/, 33],
  ];
  return classes.reduce((size, [test, count]) => (test.test(token) ? size + count : size), 0) || 1;
}

/** The longest word, run or repeat starting at `at`, and what it costs a guesser. */
function longestPattern(text: string, at: number): { length: number; bits: number } {
  let best = { length: 0, bits: 0 };
  for (const word of COMMON_WORDS) {
    if (word.length > best.length && text.startsWith(word, at)) best = { length: word.length, bits: WORD_BITS };
  }
  const run = runLength(text, at);
  if (run > best.length) best = { length: run, bits: RUN_BITS };
  const repeat = repeatLength(text, at);
  if (repeat > best.length) best = { length: repeat, bits: REPEAT_BITS };
  return best;
}

/** How many characters from `at` step by the same amount, -1, 0 or +1 (`abc`, `cba`, `aaa`). */
function runLength(text: string, at: number): number {
  if (at + 1 >= text.length) return 1;
  const step = text.charCodeAt(at + 1) - text.charCodeAt(at);
  if (Math.abs(step) > 1) return 1;
  let end = at + 1;
  while (end + 1 < text.length && text.charCodeAt(end + 1) - text.charCodeAt(end) === step) end += 1;
  return end - at + 1;
}

/** The longest part from `at` that equals a part starting earlier (possibly overlapping it, as `abab…` does). */
function repeatLength(text: string, at: number): number {
  let longest = 0;
  for (let from = 0; from < at; from += 1) {
    let length = 0;
    while (at + length < text.length && text[from + length] === text[at + length]) length += 1;
    longest = Math.max(longest, length);
  }
  return longest;
}
