// Request body bytes -> text without silent repair. Node's decoder turns invalid UTF-8 into U+FFFD,
// which would store something other than what was sent. Here each invalid byte becomes a lone
// surrogate (U+DC80 to U+DCFF, as Python's "surrogateescape"), so the request check that refuses
// lone surrogates refuses it too, naming the field it sits in.
import { isUtf8 } from "node:buffer";

export function decodeUtf8Body(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString("utf8");
  let text = "";
  let validFrom = 0;
  let i = 0;
  while (i < bytes.length) {
    const length = utf8SequenceLength(bytes, i);
    if (length > 0) {
      i += length;
      continue;
    }
    text += bytes.toString("utf8", validFrom, i) + String.fromCharCode(0xdc00 | bytes[i]!);
    i++;
    validFrom = i;
  }
  return text + bytes.toString("utf8", validFrom);
}

const continuation = (byte: number | undefined) => byte !== undefined && byte >= 0x80 && byte <= 0xbf;

/** The length of the well-formed UTF-8 sequence at `i` (RFC 3629, section 4), or 0. */
function utf8SequenceLength(bytes: Buffer, i: number): number {
  const b0 = bytes[i]!;
  if (b0 <= 0x7f) return 1;
  const b1 = bytes[i + 1];
  if (b0 >= 0xc2 && b0 <= 0xdf) return continuation(b1) ? 2 : 0;
  if (b1 === undefined) return 0;
  let secondOk: boolean;
  if (b0 === 0xe0) secondOk = b1 >= 0xa0 && b1 <= 0xbf;
  else if (b0 === 0xed) secondOk = b1 >= 0x80 && b1 <= 0x9f; // no encoded surrogates
  else if (b0 >= 0xe1 && b0 <= 0xef) secondOk = continuation(b1);
  else if (b0 === 0xf0) secondOk = b1 >= 0x90 && b1 <= 0xbf;
  else if (b0 >= 0xf1 && b0 <= 0xf3) secondOk = continuation(b1);
  else if (b0 === 0xf4) secondOk = b1 >= 0x80 && b1 <= 0x8f;
  else return 0;
  if (!secondOk || !continuation(bytes[i + 2])) return 0;
  if (b0 <= 0xef) return 3;
  return continuation(bytes[i + 3]) ? 4 : 0;
}
