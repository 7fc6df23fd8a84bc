/*
 * The proof-bundle verifier of the verification page: docs/proof-bundle.md, in JavaScript.
 *
 * A step-by-step mirror of ledger/core/proof.py `verify_bundle` (and of the codecs it
 * calls: entry, receipt, directory block, proof-of-work transaction and header, Merkle
 * rules), so that a bundle passes here exactly when it passes `notary verify`, and a bad
 * one fails at the same numbered step with the same reason. Pure: no DOM, no I/O; the
 * page's ui.js drives it, and the browser tests compare it with the Python verifier on
 * the tamper suite (tests/ledger/core/test_verify_page_*.py).
 *
 * Values read from the bundle's JSON keep Python's types, so that every type and range
 * check means the same thing on both sides: objects are Maps, integers BigInts, other
 * numbers (floats) Numbers. `loadsJson` reads JSON as Python's json.loads does (NaN and
 * Infinity accepted, "1.0" a float, duplicate keys: the last wins, at most 4300 digits in
 * an integer).
 *
 * Versions: VERSIONS maps a bundle version to its parser and its numbered steps. A new
 * version (for instance one whose document hash goes through a commitment and an
 * aggregation tree before the entry) adds one entry there: its own parser and a step list
 * that reuses the checks below and inserts its own.
 *
 * Exports globalThis.NotaryVerify; needs globalThis.nobleHashes ({sha256, sha512}).
 */
(function (root) {
  "use strict";

  const { sha256: nobleSha256, sha512: nobleSha512 } = root.nobleHashes;

  // -- errors ---------------------------------------------------------------------------

  /** A bundle that does not prove its document (Python `ProofError`). */
  class ProofError extends Error {
    constructor(step, reason, { index = null, expected = null, computed = null } = {}) {
      super(`step ${step} (${STEP_TITLES[step] || "step"}): ${reason}`);
      this.name = "ProofError";
      this.step = step;
      this.reason = reason;
      this.index = index;
      this.expected = expected;
      this.computed = computed;
    }
  }

  /** A codec error (Python `LedgerFormatError` and its subclasses). */
  class FormatError extends Error {
    constructor(message, { expected = null, computed = null } = {}) {
      // MerkleProofError adds the hashes to its text when it has both.
      const detail =
        expected !== null && computed !== null
          ? `${message} (expected ${hex(expected)}, computed ${hex(computed)})`
          : message;
      super(detail);
      this.name = "FormatError";
      this.expected = expected;
      this.computed = computed;
    }
  }

  /** `ReceiptError`: a receipt check (its own step numbers 1-5) that failed. */
  class ReceiptError extends FormatError {
    constructor(message, { step, expected = null, computed = null }) {
      super(`receipt step ${step}: ${message}`, { expected, computed });
      this.receiptStep = step;
      this.bare = `receipt step ${step}: ${message}`;
    }
  }

  class JSONDecodeError extends Error {}

  // -- bytes and hashes -----------------------------------------------------------------

  const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
  const EMPTY = new Uint8Array(0);

  function hex(bytes) {
    let out = "";
    for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]];
    return out;
  }

  function fromHexDigits(digits) {
    const out = new Uint8Array(digits.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(digits.substr(2 * i, 2), 16);
    return out;
  }

  function ascii(text) {
    return Uint8Array.from(text, (c) => c.charCodeAt(0));
  }

  function concat(...parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }

  function equal(a, b) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }

  function includesBytes(list, item) {
    return list.some((x) => equal(x, item));
  }

  function reversed(bytes) {
    return Uint8Array.from(bytes).reverse();
  }

  function uintBE(bytes) {
    let v = 0;
    for (const b of bytes) v = v * 256 + b;
    return v;
  }

  function uintLE(bytes) {
    let v = 0n;
    for (let i = bytes.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[i]);
    return v;
  }

  function bitLength(n) {
    return n === 0n ? 0 : n.toString(2).length;
  }

  const sha256 = (data) => nobleSha256(data);
  const sha256d = (data) => nobleSha256(nobleSha256(data));
  /** Factom entry hash: SHA256(SHA512(entry) || entry) (factom-formats 1.2). */
  const entryHash = (data) => nobleSha256(concat(nobleSha512(data), data));

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
    for (const [word, value] of WORDS) if (text.startsWith(word, i)) return [value, i + word.length];
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
      obj.set(key, value);
      i = skipWs(text, i);
      if (text[i] === "}") return [obj, i + 1];
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

  /** json.loads(bytes): the encoding found as json.detect_encoding finds it. */
  function loadsJson(data) {
    return typeof data === "string" ? loadsJsonText(data) : loadsJsonText(decodeJsonBytes(data), true);
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

  // -- readers ------------------------------------------------------------------------------

  /** Sequential reader (Python's `Reader` big-endian, `LEReader` little-endian). */
  class ByteReader {
    constructor(data, what, little) {
      this.data = data;
      this.pos = 0;
      this.what = what;
      this.little = little;
    }

    get remaining() {
      return this.data.length - this.pos;
    }

    take(size) {
      if (size < 0 || size > this.remaining) {
        throw new FormatError(
          `${this.what}: needs ${size} bytes at offset ${this.pos}, ${this.remaining} left`
        );
      }
      const chunk = this.data.subarray(this.pos, this.pos + Number(size));
      this.pos += Number(size);
      return chunk;
    }

    uint(size) {
      const raw = this.take(size);
      return this.little ? Number(uintLE(raw)) : uintBE(raw);
    }

    uint64() {
      return uintLE(this.take(8));
    }

    /** Bitcoin CompactSize, shortest form required (a BigInt for the 8-byte form). */
    compactSize() {
      const at = this.pos;
      if (at >= this.data.length) {
        throw new FormatError(`${this.what}: CompactSize missing at offset ${at}`);
      }
      const first = this.data[at];
      if (first < 0xfd) {
        this.pos += 1;
        return first;
      }
      const [width, minimum] = { 0xfd: [2, 0xfdn], 0xfe: [4, 0x10000n], 0xff: [8, 0x100000000n] }[first];
      if (at + 1 + width > this.data.length) {
        throw new FormatError(`${this.what}: CompactSize at offset ${at} is cut short`);
      }
      const value = uintLE(this.data.subarray(at + 1, at + 1 + width));
      if (value < minimum) {
        throw new FormatError(`${this.what}: CompactSize at offset ${at} is not in its shortest form`);
      }
      this.pos = at + 1 + width;
      return width === 8 ? value : Number(value);
    }

    expectEnd() {
      if (this.remaining) throw new FormatError(`${this.what}: ${this.remaining} trailing bytes`);
    }
  }

  // -- Merkle rules ---------------------------------------------------------------------------

  /** Factom Merkle root (factom-formats 5.1): SHA256 pairs, odd last paired with itself. */
  function factomMerkleRoot(leaves) {
    if (!leaves.length) return new Uint8Array(32);
    let level = leaves;
    while (level.length > 1) {
      const next = [];
      for (let i = 0; i < level.length; i += 2) {
        next.push(sha256(concat(level[i], level[i + 1] || level[i])));
      }
      level = next;
    }
    return level[0];
  }

  function merkleNode(node) {
    for (const [name, value] of [["left", node[0]], ["right", node[1]], ["top", node[2]]]) {
      if (value.length !== 32) throw new FormatError(`MerkleNode.${name} must be exactly 32 bytes`);
    }
    return { left: node[0], right: node[1], top: node[2] };
  }

  /** `walk_branch`: the final top of a full-detail branch from `start`. */
  function walkBranch(start, nodes) {
    let current = start;
    nodes.forEach((node, position) => {
      if (!equal(current, node.left) && !equal(current, node.right)) {
        throw new FormatError(`branch node ${position} does not contain ${hex(current)}`, {
          expected: current,
        });
      }
      const computed = sha256(concat(node.left, node.right));
      if (!equal(computed, node.top)) {
        throw new FormatError(`branch node ${position} has a wrong top`, {
          expected: node.top,
          computed,
        });
      }
      current = node.top;
    });
    return current;
  }

  /** Bitcoin's rule (`pow.merkle.root_from_path`): the root a path leads to. */
  function rootFromPath(txid, index, path) {
    if (index < 0n || index >> BigInt(path.length)) {
      throw new FormatError(`index ${index} does not fit a path of ${path.length} levels`);
    }
    let current = txid;
    path.forEach((sibling, level) => {
      if (sibling.length !== 32) {
        throw new FormatError(`path element ${level} is ${sibling.length} bytes, not 32`);
      }
      current = (index >> BigInt(level)) & 1n
        ? sha256d(concat(sibling, current))
        : sha256d(concat(current, sibling));
    });
    return current;
  }

  // -- codecs ---------------------------------------------------------------------------------

  const MAX_ENTRY_PAYLOAD_BYTES = 10240;

  /** `Entry.unmarshal` (factom-formats 1.1). */
  function parseEntry(data) {
    if (data.length < 35) {
      throw new FormatError(`entry of ${data.length} bytes is shorter than its 35-byte header`);
    }
    if (data[0] !== 0) throw new FormatError(`entry version ${data[0]} is not 0`);
    if (data.length - 35 > MAX_ENTRY_PAYLOAD_BYTES) {
      throw new FormatError(`entry payload of ${data.length - 35} bytes too large`);
    }
    const sectionEnd = 35 + uintBE(data.subarray(33, 35));
    if (sectionEnd > data.length) throw new FormatError("ExtID section runs past the end of the entry");
    const extIds = [];
    let pos = 35;
    while (pos < sectionEnd) {
      if (pos + 2 > sectionEnd) {
        throw new FormatError("ExtID length prefix does not fit in the ExtID section");
      }
      const size = uintBE(data.subarray(pos, pos + 2));
      pos += 2;
      if (pos + size > sectionEnd) {
        throw new FormatError(`ExtID of ${size} bytes overruns the ExtID section`);
      }
      extIds.push(data.subarray(pos, pos + size));
      pos += size;
    }
    return { chainId: data.subarray(1, 33), extIds, content: data.subarray(sectionEnd) };
  }

  /** `DirectoryBlock.unmarshal` (factom-formats 5.3) with its KeyMR. */
  function parseDirectoryBlock(data) {
    const r = new ByteReader(data, "directory block", false);
    r.uint(1);
    r.uint(4);
    const bodyMr = r.take(32);
    r.take(32);
    r.take(32);
    const timestampMin = r.uint(4);
    const height = r.uint(4);
    const count = r.uint(4);
    if (count * 64 !== r.remaining) {
      throw new FormatError(`directory block: ${count} pairs need ${count * 64} body bytes`);
    }
    const leaves = [];
    for (let i = 0; i < count; i++) leaves.push(sha256(r.take(64)));
    if (!equal(factomMerkleRoot(leaves), bodyMr)) {
      throw new FormatError("directory block: stored BodyMR does not match the body");
    }
    const keyMr = sha256(concat(sha256(data.subarray(0, 113)), bodyMr));
    return { height, timestampS: timestampMin * 60, keyMr };
  }

  const MAX_TX_BYTES = 100000;

  /** `PowTransaction.unmarshal` (Bitcoin legacy serialization), as its OP_RETURN payloads. */
  function parseTransaction(data) {
    if (data.length > MAX_TX_BYTES) throw new FormatError(`transaction larger than ${MAX_TX_BYTES} bytes`);
    const r = new ByteReader(data, "transaction", true);
    r.uint(4);
    const inputs = count(r, 41, "input");
    for (let i = 0; i < inputs; i++) {
      r.take(32);
      r.uint(4);
      r.take(r.compactSize());
      r.uint(4);
    }
    if (!inputs) throw new FormatError("transaction: no inputs (segwit serialization is not accepted)");
    const outputs = count(r, 9, "output");
    const payloads = [];
    for (let i = 0; i < outputs; i++) {
      r.uint64();
      const data = opReturnData(r.take(r.compactSize()));
      if (data !== null) payloads.push(data);
    }
    r.uint(4);
    r.expectEnd();
    return { payloads };
  }

  function count(r, minItemBytes, what) {
    const n = r.compactSize();
    if (BigInt(n) * BigInt(minItemBytes) > BigInt(r.remaining)) {
      throw new FormatError(`transaction: ${n} ${what}s cannot fit in ${r.remaining} bytes`);
    }
    return Number(n);
  }

  /** The data of a script that is exactly `OP_RETURN <one push>`; null otherwise. */
  function opReturnData(script) {
    if (script.length < 2 || script[0] !== 0x6a) return null;
    let data, size;
    if (script[1] >= 1 && script[1] <= 75) [data, size] = [script.subarray(2), script[1]];
    else if (script[1] === 0x4c && script.length >= 3) [data, size] = [script.subarray(3), script[2]];
    else return null;
    return data.length === size ? data : null;
  }

  const MAX_TARGET = (1n << 256n) - 1n;

  function bitsHex(bits) {
    return "0x" + bits.toString(16).padStart(8, "0");
  }

  /** `bits_to_target`: the target of compact `bits` (a BigInt). */
  function bitsToTarget(bits) {
    const exponent = bits >>> 24;
    const mantissa = BigInt(bits & 0x007fffff);
    if (bits & 0x00800000) throw new FormatError(`bits ${bitsHex(bits)} has the sign bit set`);
    const target =
      exponent <= 3 ? mantissa >> BigInt(8 * (3 - exponent)) : mantissa << BigInt(8 * (exponent - 3));
    if (target === 0n || target > MAX_TARGET) {
      throw new FormatError(`bits ${bitsHex(bits)} encode no usable target`);
    }
    return target;
  }

  function targetToBits(target) {
    let size = Math.floor((bitLength(target) + 7) / 8);
    let compact = size <= 3 ? target << BigInt(8 * (3 - size)) : target >> BigInt(8 * (size - 3));
    if (compact & 0x00800000n) {
      compact >>= 8n;
      size += 1;
    }
    return Number(compact | (BigInt(size) << 24n));
  }

  /** `difficulty_target(k)`: about k leading zero bits, as compact bits can hold it. */
  function difficultyTarget(bits) {
    return bitsToTarget(targetToBits((1n << BigInt(256 - bits)) - 1n));
  }

  /** `BlockHeader.unmarshal` (80 bytes, Bitcoin layout) with its hash. */
  function parseHeader(raw) {
    if (raw.length !== 80) throw new FormatError(`a block header is 80 bytes, got ${raw.length}`);
    const r = new ByteReader(raw, "block header", true);
    r.uint(4);
    const prevHash = r.take(32);
    const merkleRoot = r.take(32);
    r.uint(4);
    const bits = r.uint(4);
    return { prevHash, merkleRoot, bits, hash: sha256d(raw) };
  }

  // -- the trust policy ------------------------------------------------------------------------

  /** `PowParams()`: the bundled development chain (ledger/anchor/pow/params.py). */
  const DEFAULT_POLICY = Object.freeze({
    chain: "notary-devnet-pow",
    difficultyBits: 16,
    confirmations: 2,
  });

  /** A checked policy with its target; throws RangeError as PowParams does ValueError. */
  function makePolicy({ chain, difficultyBits, confirmations } = DEFAULT_POLICY) {
    if (typeof chain !== "string") throw new RangeError("chain must be a string");
    if (!Number.isInteger(difficultyBits) || difficultyBits < 1 || difficultyBits > 255) {
      throw new RangeError("difficulty_bits must be in 1..255");
    }
    if (!Number.isInteger(confirmations) || confirmations < 1) {
      throw new RangeError("confirmations must be at least 1");
    }
    return Object.freeze({ chain, difficultyBits, confirmations, target: difficultyTarget(difficultyBits) });
  }

  // -- step 0: the bundle's JSON shape (`ProofBundle.from_json`) --------------------------------

  const BUNDLE_FORMAT = "notary-proof-bundle";
  const HEX_DIGITS = /^[0-9a-fA-F]*$/;

  const fail = (what) => new ProofError(0, what);

  function object(value, what) {
    if (!(value instanceof Map)) throw fail(`${what} must be a JSON object`);
    return value;
  }

  function decodeHex(text, what) {
    if (typeof text !== "string") throw fail(`${what} must be a hex string`);
    const digits = text.startsWith("0x") ? text.slice(2) : text;
    if (digits.length % 2 || !HEX_DIGITS.test(digits)) throw fail(`${what} is not valid hex`);
    return fromHexDigits(digits);
  }

  const hexField = (obj, key) => decodeHex(obj.get(key), key);

  function uintField(obj, key) {
    const value = obj.get(key);
    if (typeof value !== "bigint" || value < 0n) throw fail(`${key} must be a non-negative integer`);
    return value;
  }

  function textField(obj, key) {
    const value = obj.get(key);
    if (typeof value !== "string") throw fail(`${key} must be a string`);
    return value;
  }

  function hexList(value, what) {
    if (!Array.isArray(value)) throw fail(`${what} must be a list`);
    return value.map((item, i) => decodeHex(item, `${what}[${i}]`));
  }

  function nodeList(value, what) {
    if (!Array.isArray(value)) throw fail(`${what} must be a list`);
    return value.map((item, i) => {
      const node = object(item, `${what}[${i}]`);
      return [hexField(node, "left"), hexField(node, "right"), hexField(node, "top")];
    });
  }

  function txProof(obj) {
    return {
      transaction: hexField(obj, "transaction"),
      txid: reversed(hexField(obj, "txid")),
      txIndex: uintField(obj, "tx_index"),
      merklePath: hexList(obj.get("merkle_path"), "merkle_path"),
    };
  }

  /** Version 1's parser: raw bytes of whatever length the JSON held (steps check them). */
  function parseV1(top) {
    const receipt = object(top.get("receipt"), "receipt");
    const anchor = object(top.get("anchor"), "anchor");
    const contract = top.get("contract");
    const bundle = {
      documentSha256: hexField(object(top.get("document"), "document"), "sha256"),
      entry: hexField(object(top.get("entry"), "entry"), "raw"),
      receipt: {
        entryHash: hexField(receipt, "entryhash"),
        branch: nodeList(receipt.get("merklebranch"), "receipt merklebranch"),
        entryBlockKeyMr: hexField(receipt, "entryblockkeymr"),
        directoryBlockKeyMr: hexField(receipt, "directoryblockkeymr"),
        directoryBlockHeight: uintField(receipt, "directoryblockheight"),
      },
      directoryBlock: hexField(object(top.get("directory_block"), "directory_block"), "raw"),
      anchor: {
        chain: textField(anchor, "chain"),
        tx: txProof(anchor),
        headers: hexList(anchor.get("headers"), "anchor headers"),
      },
      contract: null,
    };
    if (contract !== null && contract !== undefined) bundle.contract = contractPart(object(contract, "contract"));
    return bundle;
  }

  function contractPart(obj) {
    return {
      contractAddress: hexField(obj, "contractaddress"),
      heightMin: uintField(obj, "dbheightmin"),
      heightMax: uintField(obj, "dbheightmax"),
      windowMr: hexField(obj, "windowmr"),
      branch: nodeList(obj.get("merklebranch"), "contract merklebranch"),
      tx: txProof(obj),
      headerIndex: uintField(obj, "header_index"),
    };
  }

  // -- steps 1-9 of version 1 ---------------------------------------------------------------------
  //
  // Each check takes the run's context {bundle, documentSha256, policy, state} and returns
  // its report: `detail`, a list of text and {hex} parts (joined, it is the text that
  // `notary verify` prints), and `skipped`. It throws ProofError to stop the run.

  const H = (bytes) => ({ hex: hex(bytes) });

  function checkFileHash(ctx) {
    const computed = ctx.documentSha256;
    if (computed === null) return { detail: ["no file given: not checked"], skipped: true };
    if (!equal(computed, ctx.bundle.documentSha256)) {
      throw new ProofError(1, "the file's SHA-256 is not the bundle's document hash", {
        expected: ctx.bundle.documentSha256,
        computed,
      });
    }
    return { detail: ["SHA-256 ", H(computed), " matches the bundle"] };
  }

  function carries(entry, digest) {
    if (includesBytes(entry.extIds, digest) || includesBytes(entry.extIds, ascii(hex(digest)))) {
      return true;
    }
    let content;
    try {
      content = loadsJson(entry.content);
    } catch (_) {
      return false;
    }
    return content instanceof Map && content.get("sha256") === hex(digest);
  }

  function checkEntry(ctx) {
    const b = ctx.bundle;
    let entry;
    try {
      entry = parseEntry(b.entry);
    } catch (exc) {
      throw asProofError(exc, 2, "entry bytes do not parse: ");
    }
    if (!carries(entry, b.documentSha256)) throw new ProofError(2, "the entry does not carry the document hash");
    const computed = entryHash(b.entry);
    if (!equal(computed, b.receipt.entryHash)) {
      throw new ProofError(2, "the entry does not hash to the receipt's entry hash", {
        expected: b.receipt.entryHash,
        computed,
      });
    }
    return { detail: ["entry ", H(computed), " (chain ", H(entry.chainId), ") carries the hash"] };
  }

  function asProofError(exc, step, prefix) {
    if (!(exc instanceof FormatError)) throw exc;
    return new ProofError(step, prefix + exc.message);
  }

  function check32(value, what) {
    if (value.length !== 32) throw new FormatError(`${what} must be exactly 32 bytes`);
  }

  /** Step 3: `verify_receipt` over the bundle's receipt and entry (formats 6). */
  function checkReceipt(ctx) {
    const b = ctx.bundle;
    const r = b.receipt;
    let nodes;
    try {
      nodes = r.branch.map(merkleNode);
      check32(r.entryHash, "entry_hash");
      check32(r.entryBlockKeyMr, "entry_block_keymr");
      check32(r.directoryBlockKeyMr, "directory_block_keymr");
      if (r.directoryBlockHeight >= 1n << 32n) {
        throw new FormatError("directory_block_height must be a non-negative integer below 2**32");
      }
      verifyReceipt(r, nodes, b.entry);
    } catch (exc) {
      if (exc instanceof ReceiptError) {
        throw new ProofError(3, exc.bare, { expected: exc.expected, computed: exc.computed });
      }
      throw asProofError(exc, 3, "malformed receipt: ");
    }
    return {
      detail: [
        `${nodes.length} nodes: entry -> entry block `,
        H(r.entryBlockKeyMr),
        " -> directory block KeyMR ",
        H(r.directoryBlockKeyMr),
      ],
    };
  }

  function verifyReceipt(r, nodes, rawEntry) {
    const computed = entryHash(rawEntry);
    if (!equal(computed, r.entryHash)) {
      throw new ReceiptError("raw entry does not hash to the entry hash", {
        step: 1,
        expected: r.entryHash,
        computed,
      });
    }
    let current = r.entryHash;
    const tops = nodes.map((node, position) => {
      if (!equal(current, node.left) && !equal(current, node.right)) {
        throw new ReceiptError(`node ${position} does not contain the running hash`, {
          step: 2,
          expected: current,
        });
      }
      const top = sha256(concat(node.left, node.right));
      if (!equal(top, node.top)) {
        throw new ReceiptError(`node ${position} top is not SHA256(left || right)`, {
          step: 2,
          expected: node.top,
          computed: top,
        });
      }
      current = node.top;
      return current;
    });
    const at = tops.findIndex((t) => equal(t, r.entryBlockKeyMr));
    if (at < 0) {
      throw new ReceiptError("entry block KeyMR is not on the branch", {
        step: 3,
        expected: r.entryBlockKeyMr,
      });
    }
    const chainId = rawEntry.subarray(1, 33);
    if (at + 1 >= nodes.length) {
      throw new ReceiptError("no directory block node above the entry block KeyMR", { step: 4 });
    }
    const node = nodes[at + 1];
    if (!equal(node.right, r.entryBlockKeyMr) || !equal(node.left, chainId)) {
      throw new ReceiptError("entry block is not paired with the entry's chain ID", {
        step: 4,
        expected: chainId,
        computed: node.left,
      });
    }
    const final = tops.length ? tops[tops.length - 1] : r.entryHash;
    if (!equal(final, r.directoryBlockKeyMr)) {
      throw new ReceiptError("branch does not end at the directory block KeyMR", {
        step: 5,
        expected: r.directoryBlockKeyMr,
        computed: final,
      });
    }
  }

  const LAST_DATETIME_S = 253402300799; // 9999-12-31 23:59:59 UTC, Python's datetime limit

  function checkDirectoryBlock(ctx) {
    const b = ctx.bundle;
    let dblock;
    try {
      dblock = parseDirectoryBlock(b.directoryBlock);
    } catch (exc) {
      throw asProofError(exc, 4, "directory block does not parse: ");
    }
    if (!equal(dblock.keyMr, b.receipt.directoryBlockKeyMr)) {
      throw new ProofError(4, "the directory block's KeyMR is not the receipt's", {
        expected: b.receipt.directoryBlockKeyMr,
        computed: dblock.keyMr,
      });
    }
    if (BigInt(dblock.height) !== b.receipt.directoryBlockHeight) {
      throw new ProofError(
        4,
        `the directory block is at height ${dblock.height}, the receipt says ${b.receipt.directoryBlockHeight}`
      );
    }
    ctx.state.dblock = dblock;
    const when =
      dblock.timestampS <= LAST_DATETIME_S
        ? new Date(dblock.timestampS * 1000).toISOString().slice(0, 16).replace("T", " ") + " UTC"
        : `${dblock.timestampS} s after the Unix epoch`;
    return { detail: [`height ${dblock.height}, KeyMR `, H(dblock.keyMr), `, started ${when}`] };
  }

  function parseTx(raw, step) {
    try {
      return parseTransaction(raw);
    } catch (exc) {
      throw asProofError(exc, step, "transaction does not parse: ");
    }
  }

  const ANCHOR_TAG = ascii("Fa");
  const WINDOW_TAG = ascii("Fc");

  function checkAnchorPayload(ctx) {
    const dblock = ctx.state.dblock;
    const tx = parseTx(ctx.bundle.anchor.tx.transaction, 5);
    const anchors = tx.payloads
      .filter((p) => p.length === 40 && equal(p.subarray(0, 2), ANCHOR_TAG))
      .map((p) => ({ height: uintBE(p.subarray(2, 8)), keyMr: p.subarray(8) }));
    if (anchors.some((a) => a.height === dblock.height && equal(a.keyMr, dblock.keyMr))) {
      return { detail: [`"Fa" height ${dblock.height} KeyMR `, H(dblock.keyMr)] };
    }
    if (!anchors.length) throw new ProofError(5, 'the transaction has no "Fa" anchor output');
    const first = anchors[0];
    if (first.height !== dblock.height) {
      throw new ProofError(5, `the anchor is for height ${first.height}, not ${dblock.height}`);
    }
    throw new ProofError(5, "the anchor names another directory block KeyMR", {
      expected: dblock.keyMr,
      computed: first.keyMr,
    });
  }

  /** Shared by steps 6 and 9: txid, Merkle path, the header's Merkle root. */
  function checkInclusion(tx, headerRaw, step, index) {
    if (tx.transaction.length === 64) {
      throw new ProofError(step, "a 64-byte transaction could pass for a Merkle node");
    }
    const txid = sha256d(tx.transaction);
    if (!equal(txid, tx.txid)) {
      throw new ProofError(step, "the stated txid is not SHA256d(transaction)", {
        expected: tx.txid,
        computed: txid,
      });
    }
    let header, root;
    try {
      header = parseHeader(headerRaw);
      root = rootFromPath(txid, tx.txIndex, tx.merklePath);
    } catch (exc) {
      if (!(exc instanceof FormatError)) throw exc;
      throw new ProofError(step, `header ${index}: ${exc.message}`, { index });
    }
    if (!equal(root, header.merkleRoot)) {
      throw new ProofError(step, `the Merkle path does not lead to the root of header ${index}`, {
        index,
        expected: header.merkleRoot,
        computed: root,
      });
    }
    return header;
  }

  function checkAnchorInclusion(ctx) {
    const anchor = ctx.bundle.anchor;
    if (!anchor.headers.length) throw new ProofError(6, "the bundle has no anchor block header");
    const header = checkInclusion(anchor.tx, anchor.headers[0], 6, 0);
    return {
      detail: [
        "transaction ",
        H(reversed(anchor.tx.txid)),
        ` is #${anchor.tx.txIndex} in block `,
        H(reversed(header.hash)),
      ],
    };
  }

  function checkProofOfWork(ctx) {
    const { bundle, policy } = ctx;
    if (bundle.anchor.chain !== policy.chain) {
      throw new ProofError(
        7,
        `anchored in chain ${reprStr(bundle.anchor.chain)}; the policy trusts ${reprStr(policy.chain)}`
      );
    }
    ctx.state.headers = bundle.anchor.headers.map((raw, i) => {
      let header, target;
      try {
        header = parseHeader(raw);
        target = bitsToTarget(header.bits);
      } catch (exc) {
        if (!(exc instanceof FormatError)) throw exc;
        throw new ProofError(7, `header ${i}: ${exc.message}`, { index: i });
      }
      if (target > policy.target) {
        throw new ProofError(
          7,
          `header ${i}: work is short (bits ${bitsHex(header.bits)} are easier than` +
            ` ${policy.difficultyBits} bits)`,
          { index: i }
        );
      }
      if (uintLE(header.hash) > target) {
        throw new ProofError(7, `header ${i}: hash does not meet its target`, { index: i });
      }
      return header;
    });
    const n = ctx.state.headers.length;
    return {
      detail: [`${n} headers of chain ${reprStr(policy.chain)}, each >= ${policy.difficultyBits} bits`],
    };
  }

  function checkLinks(ctx) {
    const { headers } = ctx.state;
    const { policy } = ctx;
    for (let i = 1; i < headers.length; i++) {
      const previous = headers[i - 1].hash;
      if (!equal(headers[i].prevHash, previous)) {
        throw new ProofError(8, `header ${i} does not link to header ${i - 1}`, {
          index: i,
          expected: previous,
          computed: headers[i].prevHash,
        });
      }
    }
    if (headers.length < policy.confirmations) {
      throw new ProofError(
        8,
        `${headers.length} confirmations, the policy needs ${policy.confirmations}`
      );
    }
    return {
      detail: [
        `${headers.length} linked headers = ${headers.length} confirmations` +
          ` (${policy.confirmations} required)`,
      ],
    };
  }

  function checkContract(ctx) {
    const c = ctx.bundle.contract;
    if (c === null) return { detail: ["no window anchor in this bundle"], skipped: true };
    const { dblock, headers } = ctx.state;
    checkWindowCommitment(c, dblock);
    checkWindowBranch(c, dblock);
    if (c.headerIndex >= BigInt(headers.length)) {
      throw new ProofError(9, `header_index ${c.headerIndex} is not in the bundle`);
    }
    const at = Number(c.headerIndex);
    checkInclusion(c.tx, ctx.bundle.anchor.headers[at], 9, at);
    if (headers.length - at < ctx.policy.confirmations) {
      throw new ProofError(9, "the contract block lacks confirmations");
    }
    return {
      detail: [`window ${c.heightMin}..${c.heightMax} root `, H(c.windowMr), ` in header ${at}`],
    };
  }

  const MAX_HEIGHT = 1n << 48n;

  function height6(height) {
    if (height < 0n || height >= MAX_HEIGHT) throw new FormatError(`height must fit 6 bytes, got ${height}`);
    const out = new Uint8Array(6);
    let v = height;
    for (let i = 5; i >= 0; i--) {
      out[i] = Number(v & 0xffn);
      v >>= 8n;
    }
    return out;
  }

  function checkWindowCommitment(c, dblock) {
    const tx = parseTx(c.tx.transaction, 9);
    let stated;
    try {
      if (c.contractAddress.length !== 20) throw new FormatError("a contract address is 20 bytes");
      const low = height6(c.heightMin);
      const high = height6(c.heightMax);
      if (c.heightMin > c.heightMax) throw new FormatError("window lowest height above its highest height");
      if (c.windowMr.length !== 32) throw new FormatError("window Merkle root must be exactly 32 bytes");
      stated = concat(WINDOW_TAG, c.contractAddress, low, high, c.windowMr);
    } catch (exc) {
      throw asProofError(exc, 9, "malformed window: ");
    }
    const committed = tx.payloads.filter((p) => p.length === 66 && equal(p.subarray(0, 2), WINDOW_TAG));
    if (!includesBytes(committed, stated)) {
      throw new ProofError(9, "the contract transaction does not commit to this window");
    }
    const height = BigInt(dblock.height);
    if (!(c.heightMin <= height && height <= c.heightMax)) {
      throw new ProofError(9, `height ${dblock.height} is outside ${c.heightMin}..${c.heightMax}`);
    }
  }

  function checkWindowBranch(c, dblock) {
    let nodes, top;
    try {
      nodes = c.branch.map(merkleNode);
      top = walkBranch(dblock.keyMr, nodes);
    } catch (exc) {
      throw asProofError(exc, 9, "window branch: ");
    }
    if (!equal(top, c.windowMr)) {
      throw new ProofError(9, "the branch does not end at the window root", {
        expected: c.windowMr,
        computed: top,
      });
    }
    const depth = bitLength(c.heightMax - c.heightMin);
    const position = branchIndex(dblock.keyMr, nodes);
    const wanted = BigInt(dblock.height) - c.heightMin;
    if (nodes.length !== depth || position !== wanted) {
      throw new ProofError(
        9,
        `the branch proves position ${position} of ${nodes.length} levels; height` +
          ` ${dblock.height} is position ${wanted} of ${depth}`
      );
    }
  }

  /** The leaf position a full-detail branch walks from (bit set: running hash on the right). */
  function branchIndex(start, nodes) {
    let index = 0n;
    let current = start;
    nodes.forEach((node, level) => {
      if (equal(current, node.right) && !equal(current, node.left)) index |= 1n << BigInt(level);
      current = node.top;
    });
    return index;
  }

  // -- versions and the run --------------------------------------------------------------------

  /** Step titles, as `ledger.core.proof.Step.title` names them. */
  const STEP_TITLES = {
    0: "bundle format",
    1: "file hash",
    2: "entry",
    3: "Merkle steps",
    4: "directory block",
    5: "anchor payload",
    6: "anchor transaction",
    7: "proof of work",
    8: "header links",
    9: "window anchor",
  };

  const step = (number, check) => ({ step: number, title: STEP_TITLES[number], check });

  /**
   * Bundle versions this page verifies: a parser (JSON object -> bundle, ProofError at
   * step 0) and the numbered steps after step 0, in order. Step 0 (JSON, format, version)
   * is common to every version.
   */
  const VERSIONS = new Map([
    [
      1,
      {
        parse: parseV1,
        steps: [
          step(1, checkFileHash),
          step(2, checkEntry),
          step(3, checkReceipt),
          step(4, checkDirectoryBlock),
          step(5, checkAnchorPayload),
          step(6, checkAnchorInclusion),
          step(7, checkProofOfWork),
          step(8, checkLinks),
          step(9, checkContract),
        ],
      },
    ],
  ]);

  /** Step 0: JSON text (string or bytes) or an already-read value -> [version, bundle]. */
  function readBundle(input) {
    let top = input;
    if (typeof input === "string" || input instanceof Uint8Array) {
      try {
        top = loadsJson(input);
      } catch (exc) {
        if (!(exc instanceof JSONDecodeError || exc instanceof RangeError)) throw exc;
        throw new ProofError(0, `not valid JSON: ${exc.message}`);
      }
    }
    top = object(top, "bundle");
    if (top.get("format") !== BUNDLE_FORMAT) throw fail(`not a ${BUNDLE_FORMAT} document`);
    const version = top.get("version");
    for (const [number, spec] of VERSIONS) {
      if (equalsInt(version, number)) return [number, spec, spec.parse(top)];
    }
    throw fail(`unsupported bundle version ${repr(version)}`);
  }

  /**
   * Check a bundle: `verify_bundle`'s steps in order, each reported to `onStep`.
   *
   * @param input bundle JSON text (string or UTF-8 bytes) or a value read by loadsJson.
   * @param options.documentSha256 the file's SHA-256 (Uint8Array, 32 bytes) or null (step 1
   *     is then skipped, as the Python verifier does without a file).
   * @param options.policy {chain, difficultyBits, confirmations}; DEFAULT_POLICY if absent.
   * @param options.onStep called with {step, title, detail, skipped} for each step held.
   * @throws ProofError for the first step that fails.
   */
  function verifyBundle(input, { documentSha256 = null, policy = DEFAULT_POLICY, onStep = () => {} } = {}) {
    const trusted = makePolicy(policy);
    const [version, spec, bundle] = readBundle(input);
    onStep({ step: 0, title: STEP_TITLES[0], detail: [`${BUNDLE_FORMAT} version ${version}`], skipped: false });
    const ctx = { bundle, documentSha256, policy: trusted, state: {} };
    for (const { step: number, title, check } of spec.steps) {
      const report = check(ctx);
      onStep({ step: number, title, detail: report.detail, skipped: Boolean(report.skipped) });
    }
    return bundle;
  }

  const detailText = (detail) => detail.map((part) => (typeof part === "string" ? part : part.hex)).join("");

  /**
   * `verifyBundle` as plain data, for the page and the tests:
   * {ok, version, steps: [{step, title, detail, parts, skipped}], failure, policy}.
   */
  function run(input, options = {}) {
    const steps = [];
    const policy = { ...DEFAULT_POLICY, ...(options.policy || {}) };
    const out = { ok: false, steps, failure: null, policy };
    try {
      verifyBundle(input, {
        ...options,
        policy,
        onStep: (r) => steps.push({ ...r, parts: r.detail, detail: detailText(r.detail) }),
      });
      out.ok = true;
    } catch (exc) {
      if (!(exc instanceof ProofError)) throw exc;
      out.failure = {
        step: exc.step,
        title: STEP_TITLES[exc.step],
        reason: exc.reason,
        message: exc.message,
        index: exc.index,
        expected: exc.expected === null ? null : hex(exc.expected),
        computed: exc.computed === null ? null : hex(exc.computed),
      };
    }
    return out;
  }

  /** Parse a bundle far enough to show what it is about (document hash, height); or null. */
  function summary(input) {
    try {
      const [version, , bundle] = readBundle(input);
      return {
        version,
        documentSha256: hex(bundle.documentSha256),
        height: bundle.receipt.directoryBlockHeight.toString(),
        chain: bundle.anchor.chain,
      };
    } catch (exc) {
      if (exc instanceof ProofError) return null;
      throw exc;
    }
  }

  root.NotaryVerify = Object.freeze({
    BUNDLE_FORMAT,
    DEFAULT_POLICY,
    STEP_TITLES,
    VERSIONS,
    ProofError,
    detailText,
    hex,
    loadsJson,
    makePolicy,
    repr,
    run,
    sha256,
    summary,
    verifyBundle,
  });
})(globalThis);
