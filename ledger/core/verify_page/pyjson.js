/*
 * JSON read as Python's json.loads reads it, and Python's repr() of what it reads: the
 * part of the verification page that makes its step 0 mean what ledger/core/proof/bundle.py's
 * does (see verify.js).
 *
 * Values keep Python's types: objects are Maps (duplicate keys: the last wins), integers
 * BigInts (at most 4300 digits, as int() allows), other numbers Numbers (floats; NaN and
 * Infinity accepted), so "1" and "1.0" stay apart. Bytes are decoded as json.loads decodes
 * them (json.detect_encoding: UTF-8 with or without a BOM, UTF-16, UTF-32; encoded
 * surrogates pass). Exports globalThis.NotaryPyJson.
 */
(function (root) {
  "use strict";

  class JSONDecodeError extends Error {}

  function uintBE(bytes) {
    let v = 0;
    for (const b of bytes) v = v * 256 + b;
    return v;
  }

  // -- Python's repr, for messages that print a value -------------------------------------

  const NOT_PRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;

  function reprStr(text) {
    const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
    let out = quote;
    for (const ch of text) {
      const cp = ch.codePointAt(0);
      if (ch === quote || ch === "\\") out += "\\" + ch;
      else if (ch === "\t") out += "\\t";
      else if (ch === "\n") out += "\\n";
      else if (ch === "\r") out += "\\r";
      else if (cp < 0x20 || cp === 0x7f) out += "\\x" + cp.toString(16).padStart(2, "0");
      else if (cp < 0x7f) out += ch;
      else if (ch !== " " && NOT_PRINTABLE.test(ch)) {
        if (cp <= 0xff) out += "\\x" + cp.toString(16).padStart(2, "0");
        else if (cp <= 0xffff) out += "\\u" + cp.toString(16).padStart(4, "0");
        else out += "\\U" + cp.toString(16).padStart(8, "0");
      } else out += ch;
    }
    return out + quote;
  }

  function reprFloat(x) {
    if (Number.isNaN(x)) return "nan";
    if (x === Infinity) return "inf";
    if (x === -Infinity) return "-inf";
    if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
    const [mantissa, expText] = x.toExponential().split("e");
    const exp = Number(expText);
    const sign = mantissa.startsWith("-") ? "-" : "";
    const digits = mantissa.replace("-", "").replace(".", "");
    if (exp >= -4 && exp < 16) {
      if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
      const whole = digits.slice(0, exp + 1).padEnd(exp + 1, "0");
      return `${sign}${whole}.${digits.slice(exp + 1) || "0"}`;
    }
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  }

  /** Python's repr() of a value read by loadsJson. */
  function repr(value) {
    if (value === null || value === undefined) return "None";
    if (value === true) return "True";
    if (value === false) return "False";
    if (typeof value === "bigint") return value.toString();
    if (typeof value === "number") return reprFloat(value);
    if (typeof value === "string") return reprStr(value);
    if (Array.isArray(value)) return `[${value.map(repr).join(", ")}]`;
    if (value instanceof Map) {
      return `{${[...value].map(([k, v]) => `${reprStr(k)}: ${repr(v)}`).join(", ")}}`;
    }
    return String(value);
  }

  /** Python's `value == 1` for a value read by loadsJson (1, 1.0 and true all are). */
  function equalsInt(value, n) {
    return value === BigInt(n) || value === n || (n === 1 && value === true) || (n === 0 && value === false);
  }

  // -- JSON as Python's json.loads reads it -------------------------------------------------

  /**
   * Deepest nesting of arrays and objects read. Python has no fixed limit: its parser
   * stops with RecursionError near its recursion limit (1000) less the caller's stack
   * depth, which `notary verify` turns into a step-0 failure; no bundle or entry comes
   * near either.
   */
  const MAX_JSON_DEPTH = 900;
  const MAX_INT_DIGITS = 4300; // sys.int_info.default_max_str_digits
  const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
  const ESCAPES = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

  function jsonError(message, text, pos) {
    const before = text.slice(0, pos);
    const line = (before.match(/\n/g) || []).length + 1;
    const column = pos - before.lastIndexOf("\n");
    return new JSONDecodeError(`${message}: line ${line} column ${column} (char ${pos})`);
  }

  function skipWs(text, i) {
    while (i < text.length) {
      const c = text[i];
      if (c !== " " && c !== "\t" && c !== "\n" && c !== "\r") break;
      i++;
    }
    return i;
  }

  function scanString(text, start) {
    // `start` is just after the opening quote.
    let out = "";
    let i = start;
    for (;;) {
      let j = i;
      while (j < text.length) {
        const c = text.charCodeAt(j);
        if (c === 0x22 || c === 0x5c || c < 0x20) break;
        j++;
      }
      out += text.slice(i, j);
      if (j >= text.length) throw jsonError("Unterminated string starting at", text, start - 1);
      const c = text[j];
      if (c === '"') return [out, j + 1];
      if (c !== "\\") throw jsonError("Invalid control character at", text, j);
      const esc = text[j + 1];
      if (esc === undefined) throw jsonError("Unterminated string starting at", text, start - 1);
      if (esc !== "u") {
        if (!(esc in ESCAPES)) throw jsonError(`Invalid \\escape: ${reprStr(esc)}`, text, j);
        out += ESCAPES[esc];
        i = j + 2;
        continue;
      }
      let [unit, next] = readUnit(text, j);
      if (unit >= 0xd800 && unit <= 0xdbff && text[next] === "\\" && text[next + 1] === "u") {
        const [low, after] = readUnit(text, next);
        if (low >= 0xdc00 && low <= 0xdfff) {
          out += String.fromCharCode(unit, low);
          i = after;
          continue;
        }
      }
      out += String.fromCharCode(unit);
      i = next;
    }
  }

  function readUnit(text, at) {
    // `at` is the backslash of a \uXXXX escape.
    const digits = text.slice(at + 2, at + 6);
    if (!/^[0-9a-fA-F]{4}$/.test(digits)) throw jsonError("Invalid \\uXXXX escape", text, at + 1);
    return [parseInt(digits, 16), at + 6];
  }

  /**
   * A refusal of the canonical reading (`loadsJson(data, {canonical: true})`): a key twice in
   * one object (raised when the object closes, as Python's `object_pairs_hook` is called) or
   * NaN / Infinity (raised where it stands, as `parse_constant` is called). The messages are
   * `ledger.core.proof.bundle`'s.
   */
  class CanonicalError extends Error {
    constructor(message) {
      super(message);
      this.name = "CanonicalError";
    }
  }

  let canonical = false;

  function scanValue(text, i, depth) {
    const c = text[i];
    if (c === '"') return scanString(text, i + 1);
    if (c === "{" || c === "[") {
      if (depth >= MAX_JSON_DEPTH) {
        const kind = c === "{" ? "object" : "array";
        throw new JSONDecodeError(
          `maximum recursion depth exceeded while decoding a JSON ${kind} from a unicode string`
        );
      }
      return c === "{" ? scanObject(text, i + 1, depth + 1) : scanArray(text, i + 1, depth + 1);
    }
    for (const [word, value] of WORDS) {
      if (!text.startsWith(word, i)) continue;
      if (canonical && typeof value === "number") throw new CanonicalError(`${word} is not a JSON number`);
      return [value, i + word.length];
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) throw jsonError("Expecting value", text, i);
    const end = i + m[0].length;
    if (m[1] !== undefined || m[2] !== undefined) return [Number(m[0]), end];
    const digits = m[0].replace("-", "").length;
    if (digits > MAX_INT_DIGITS) {
      throw new JSONDecodeError(
        `Exceeds the limit (${MAX_INT_DIGITS} digits) for integer string conversion:` +
          ` value has ${digits} digits; use sys.set_int_max_str_digits() to increase the limit`
      );
    }
    return [BigInt(m[0]), end];
  }

  const WORDS = [
    ["null", null],
    ["true", true],
    ["false", false],
    ["NaN", NaN],
    ["Infinity", Infinity],
    ["-Infinity", -Infinity],
  ];

  function scanObject(text, i, depth) {
    const obj = new Map();
    let twice = null;
    i = skipWs(text, i);
    if (text[i] === "}") return [obj, i + 1];
    for (;;) {
      if (text[i] !== '"') {
        throw jsonError("Expecting property name enclosed in double quotes", text, i);
      }
      let key;
      [key, i] = scanString(text, i + 1);
      i = skipWs(text, i);
      if (text[i] !== ":") throw jsonError("Expecting ':' delimiter", text, i);
      i = skipWs(text, i + 1);
      let value;
      [value, i] = scanValue(text, i, depth);
      if (twice === null && obj.has(key)) twice = key;
      obj.set(key, value);
      i = skipWs(text, i);
      if (text[i] === "}") {
        if (canonical && twice !== null) throw new CanonicalError(`duplicate key ${reprStr(twice)}`);
        return [obj, i + 1];
      }
      if (text[i] !== ",") throw jsonError("Expecting ',' delimiter", text, i);
      i = skipWs(text, i + 1);
    }
  }

  function scanArray(text, i, depth) {
    const list = [];
    i = skipWs(text, i);
    if (text[i] === "]") return [list, i + 1];
    for (;;) {
      let value;
      [value, i] = scanValue(text, i, depth);
      list.push(value);
      i = skipWs(text, i);
      if (text[i] === "]") return [list, i + 1];
      if (text[i] !== ",") throw jsonError("Expecting ',' delimiter", text, i);
      i = skipWs(text, i + 1);
    }
  }

  /** json.loads(str) (`fromBytes`: after decoding bytes, which skips the BOM check). */
  function loadsJsonText(text, fromBytes = false) {
    if (!fromBytes && text.startsWith("\ufeff")) {
      throw jsonError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0);
    }
    const [value, end] = scanValue(text, skipWs(text, 0), 0);
    const rest = skipWs(text, end);
    if (rest !== text.length) throw jsonError("Extra data", text, rest);
    return value;
  }

  /**
   * json.loads(bytes): the encoding found as json.detect_encoding finds it. `canonical`: as
   * `ProofBundle.loads` reads (CanonicalError for a duplicate key or NaN / Infinity).
   */
  function loadsJson(data, { canonical: strict = false } = {}) {
    canonical = strict;
    try {
      return typeof data === "string" ? loadsJsonText(data) : loadsJsonText(decodeJsonBytes(data), true);
    } finally {
      canonical = false;
    }
  }

  function detectEncoding(b) {
    const starts = (...sig) => sig.every((x, i) => b[i] === x);
    if (starts(0, 0, 0xfe, 0xff)) return "utf-32-be*";
    if (starts(0xff, 0xfe, 0, 0)) return "utf-32-le*";
    if (starts(0xfe, 0xff)) return "utf-16-be*";
    if (starts(0xff, 0xfe)) return "utf-16-le*";
    if (starts(0xef, 0xbb, 0xbf)) return "utf-8-sig";
    if (b.length >= 4) {
      if (!b[0]) return b[1] ? "utf-16-be" : "utf-32-be";
      if (!b[1]) return b[2] || b[3] ? "utf-16-le" : "utf-32-le";
    } else if (b.length === 2) {
      if (!b[0]) return "utf-16-be";
      if (!b[1]) return "utf-16-le";
    }
    return "utf-8";
  }

  /** Decode as Python does with errors="surrogatepass" ("*": a BOM to drop). */
  function decodeJsonBytes(b) {
    const encoding = detectEncoding(b);
    const bom = encoding.endsWith("*");
    if (encoding.startsWith("utf-32")) return decodeUtf32(b, encoding.includes("le"), bom);
    if (encoding.startsWith("utf-16")) return decodeUtf16(b, encoding.includes("le"), bom);
    return decodeUtf8(encoding === "utf-8-sig" ? b.subarray(3) : b);
  }

  function decodeError(codec, reason, pos) {
    return new JSONDecodeError(`'${codec}' codec can't decode bytes in position ${pos}: ${reason}`);
  }

  function decodeUtf16(b, little, bom) {
    const start = bom ? 2 : 0;
    if ((b.length - start) % 2) throw decodeError("utf-16", "truncated data", b.length - 1);
    const units = [];
    for (let i = start; i < b.length; i += 2) {
      units.push(little ? b[i] | (b[i + 1] << 8) : (b[i] << 8) | b[i + 1]);
    }
    return fromUnits(units);
  }

  function decodeUtf32(b, little, bom) {
    const start = bom ? 4 : 0;
    if ((b.length - start) % 4) throw decodeError("utf-32", "truncated data", b.length - 1);
    const units = [];
    for (let i = start; i < b.length; i += 4) {
      const q = little ? [b[i + 3], b[i + 2], b[i + 1], b[i]] : [b[i], b[i + 1], b[i + 2], b[i + 3]];
      const cp = uintBE(q);
      if (cp > 0x10ffff) throw decodeError("utf-32", "code point not in range(0x110000)", i);
      if (cp >= 0x10000) units.push(0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
      else units.push(cp);
    }
    return fromUnits(units);
  }

  function fromUnits(units) {
    let out = "";
    for (let i = 0; i < units.length; i += 8192) {
      out += String.fromCharCode(...units.slice(i, i + 8192));
    }
    return out;
  }

  /** Strict UTF-8 as CPython decodes it; encoded surrogates pass (surrogatepass). */
  function decodeUtf8(b) {
    const units = [];
    let i = 0;
    while (i < b.length) {
      const c = b[i];
      if (c < 0x80) {
        units.push(c);
        i++;
        continue;
      }
      let need, cp, lo = 0x80, hi = 0xbf;
      if (c >= 0xc2 && c <= 0xdf) [need, cp] = [1, c & 0x1f];
      else if (c >= 0xe0 && c <= 0xef) {
        [need, cp] = [2, c & 0x0f];
        if (c === 0xe0) lo = 0xa0;
      } else if (c >= 0xf0 && c <= 0xf4) {
        [need, cp] = [3, c & 0x07];
        if (c === 0xf0) lo = 0x90;
        if (c === 0xf4) hi = 0x8f;
      } else throw decodeError("utf-8", "invalid start byte", i);
      for (let k = 1; k <= need; k++) {
        const x = b[i + k];
        const [low, high] = k === 1 ? [lo, hi] : [0x80, 0xbf];
        if (x === undefined) throw decodeError("utf-8", "unexpected end of data", i);
        if (x < low || x > high) throw decodeError("utf-8", "invalid continuation byte", i);
        cp = (cp << 6) | (x & 0x3f);
      }
      if (cp >= 0x10000) units.push(0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
      else units.push(cp);
      i += need + 1;
    }
    return fromUnits(units);
  }

  root.NotaryPyJson = Object.freeze({ CanonicalError, JSONDecodeError, equalsInt, loadsJson, repr, reprStr });
})(globalThis);
