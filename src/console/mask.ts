// Emails and phone numbers in stored bodies are customers' personal data: the console shows them masked unless an
// operator asks to reveal one event. Masking works on the text, so the body keeps its layout and stays the JSON
// it was (valid or not).

const EMAIL = /([A-Za-z0-9._%+-])[A-Za-z0-9._%+-]*@([A-Za-z0-9-]+\.)+([A-Za-z]{2,})/g;
// A JSON member whose name says phone (phone, phoneNumber, mobile, …) and whose value is a string.
const PHONE_MEMBER = /("(?:[A-Za-z_]*(?:[Pp]hone|[Mm]obile)[A-Za-z_]*)"\s*:\s*")([^"\\]*)(")/g;

/** The text with emails as `a***@***.com` and phone-number members keeping only their last two digits. */
export function maskPersonalData(text: string): string {
  return text
    .replace(EMAIL, (_all, first: string, _domain: string, tld: string) => `${first}***@***.${tld}`)
    .replace(PHONE_MEMBER, (_all, name: string, value: string, quote: string) => `${name}${maskDigits(value)}${quote}`);
}

function maskDigits(value: string): string {
  const digits = value.replace(/\D/g, '');
  return digits.length <= 2 ? value.replace(/\d/g, '*') : `${'*'.repeat(digits.length - 2)}${digits.slice(-2)}`;
}
