/*
 * A strict DER reader (ITU-T X.690, "Distinguished encoding rules"): what the page needs to
 * read RFC 3161 tokens, CMS SignedData and X.509 certificates, and no more.
 *
 * `parse(bytes)` reads one element that must fill `bytes` exactly; a constructed element's
 * children are read at once, so malformed nesting anywhere is refused. Refused: indefinite
 * lengths, non-minimal lengths, high tag numbers written long when short would do, and any
 * element running past its parent. Each node keeps its own bytes (`der`), as received, so a
 * signature is checked over exactly the bytes that were signed.
 *
 * Node: {cls (0 universal, 1 application, 2 context, 3 private), constructed, tag (number),
 * der (the whole element), body (the contents), children (constructed only)}.
 *
 * Pure: no DOM, no I/O. Exports globalThis.NotaryDer.
 */
(function (root) {
  "use strict";

  /** A DER element that does not read (its `message` says where and why). */
  class DerError extends Error {
    constructor(message) {
      super(message);
      this.name = "DerError";
    }
  }

  const MAX_DEPTH = 32;

  function readHeader(bytes, at, end) {
    if (at + 2 > end) throw new DerError(`element at ${at} is truncated`);
    const first = bytes[at];
    let pos = at + 1;
    let tag = first & 0x1f;
    if (tag === 0x1f) {
      tag = 0;
      for (let i = 0; ; i++) {
        if (pos >= end || i > 3) throw new DerError(`tag at ${at} is too long`);
        const b = bytes[pos++];
        if (i === 0 && b === 0x80) throw new DerError(`tag at ${at} is not minimal`);
        tag = tag * 128 + (b & 0x7f);
        if (!(b & 0x80)) break;
      }
      if (tag < 0x1f) throw new DerError(`tag at ${at} is not minimal`);
    }
    if (pos >= end) throw new DerError(`element at ${at} is truncated`);
    let len = bytes[pos++];
    if (len === 0x80) throw new DerError(`element at ${at} has an indefinite length`);
    if (len > 0x80) {
      const count = len & 0x7f;
      if (count > 4 || pos + count > end) throw new DerError(`length at ${at} is too long`);
      len = 0;
      for (let i = 0; i < count; i++) len = len * 256 + bytes[pos++];
      if (bytes[pos - count] === 0 || len < 0x80) throw new DerError(`length at ${at} is not minimal`);
    }
    if (pos + len > end) throw new DerError(`element at ${at} runs past its end`);
    return { cls: first >> 6, constructed: Boolean(first & 0x20), tag, headerEnd: pos, end: pos + len };
  }

  function readNode(bytes, at, end, depth) {
    if (depth > MAX_DEPTH) throw new DerError("elements are nested too deep");
    const h = readHeader(bytes, at, end);
    const node = {
      cls: h.cls,
      constructed: h.constructed,
      tag: h.tag,
      der: bytes.subarray(at, h.end),
      body: bytes.subarray(h.headerEnd, h.end),
      children: null,
      end: h.end,
    };
    if (h.constructed) {
      node.children = [];
      for (let pos = h.headerEnd; pos < h.end; ) {
        const child = readNode(bytes, pos, h.end, depth + 1);
        node.children.push(child);
        pos = child.end;
      }
    }
    return node;
  }

  /** Read `bytes` (Uint8Array) as exactly one DER element; throws DerError. */
  function parse(bytes) {
    const node = readNode(bytes, 0, bytes.length, 0);
    if (node.end !== bytes.length) throw new DerError(`${bytes.length - node.end} bytes after the element`);
    return node;
  }

  // -- universal tags ---------------------------------------------------------------------

  const TAG = Object.freeze({
    BOOLEAN: 1, INTEGER: 2, BIT_STRING: 3, OCTET_STRING: 4, NULL: 5, OID: 6,
    UTF8: 12, SEQUENCE: 16, SET: 17, PRINTABLE: 19, T61: 20, IA5: 22,
    UTC_TIME: 23, GENERALIZED_TIME: 24, UNIVERSAL: 28, BMP: 30,
  });

  /** `node` if it is universal `tag` (and constructed for SEQUENCE and SET), else DerError. */
  function expect(node, tag, what) {
    const wantConstructed = tag === TAG.SEQUENCE || tag === TAG.SET;
    if (!node || node.cls !== 0 || node.tag !== tag || node.constructed !== wantConstructed) {
      throw new DerError(`${what} is not the expected type`);
    }
    return node;
  }

  /** `node` if it is context-specific [tag] (constructed or not as asked), else null. */
  function context(node, tag, { constructed = true } = {}) {
    return node && node.cls === 2 && node.tag === tag && node.constructed === constructed ? node : null;
  }

  /** The one element inside an EXPLICIT context-specific [tag], or null when `node` is
   * not that tag. */
  function explicit(node, tag, what) {
    if (!context(node, tag)) return null;
    if (node.children.length !== 1) throw new DerError(`${what} must hold one element`);
    return node.children[0];
  }

  /** The children of a SEQUENCE / SET, at least `min` and at most `max` of them. */
  function items(node, what, { min = 0, max = Infinity, tag = TAG.SEQUENCE } = {}) {
    expect(node, tag, what);
    if (node.children.length < min || node.children.length > max) throw new DerError(`${what} has the wrong number of parts`);
    return node.children;
  }

  /** An OBJECT IDENTIFIER as dotted text. */
  function oid(node, what = "object identifier") {
    const b = expect(node, TAG.OID, what).body;
    if (!b.length || b[b.length - 1] & 0x80) throw new DerError(`${what} is malformed`);
    const arcs = [];
    let value = 0n;
    let start = true;
    for (const byte of b) {
      if (start && byte === 0x80) throw new DerError(`${what} is not minimal`);
      value = (value << 7n) | BigInt(byte & 0x7f);
      start = !(byte & 0x80);
      if (start) {
        if (!arcs.length) arcs.push(value < 80n ? value / 40n : 2n, value < 80n ? value % 40n : value - 80n);
        else arcs.push(value);
        value = 0n;
      }
    }
    return arcs.join(".");
  }

  /** An INTEGER as a BigInt (two's complement, minimal encoding required). */
  function integer(node, what = "integer") {
    const b = expect(node, TAG.INTEGER, what).body;
    if (!b.length) throw new DerError(`${what} is empty`);
    if (b.length > 1 && ((b[0] === 0 && !(b[1] & 0x80)) || (b[0] === 0xff && b[1] & 0x80))) {
      throw new DerError(`${what} is not minimal`);
    }
    let value = 0n;
    for (const byte of b) value = (value << 8n) | BigInt(byte);
    return b[0] & 0x80 ? value - (1n << BigInt(8 * b.length)) : value;
  }

  /** A small non-negative INTEGER as a Number. */
  const smallInt = (node, what) => Number(integer(node, what));

  function boolean(node, what = "boolean") {
    const b = expect(node, TAG.BOOLEAN, what).body;
    if (b.length !== 1 || (b[0] !== 0 && b[0] !== 0xff)) throw new DerError(`${what} is not a DER boolean`);
    return b[0] === 0xff;
  }

  const octets = (node, what = "octet string") => expect(node, TAG.OCTET_STRING, what).body;

  /** A BIT STRING with no unused bits, as its bytes. */
  function bits(node, what = "bit string") {
    const b = expect(node, TAG.BIT_STRING, what).body;
    if (!b.length || b[0] !== 0) throw new DerError(`${what} has unused bits`);
    return b.subarray(1);
  }

  const TIME_FORMS = {
    [TAG.UTC_TIME]: /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/,
    [TAG.GENERALIZED_TIME]: /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\.\d+)?Z$/,
  };

  /** A UTCTime or GeneralizedTime (DER form: seconds, `Z`) as {date (Date), text (ISO 8601,
   * fraction kept to milliseconds)}. */
  function time(node, what = "time") {
    const form = node && node.cls === 0 && !node.constructed ? TIME_FORMS[node.tag] : undefined;
    const match = form && form.exec(String.fromCharCode(...node.body));
    if (!match) throw new DerError(`${what} is not a DER time`);
    let year = Number(match[1]);
    if (node.tag === TAG.UTC_TIME) year += year < 50 ? 2000 : 1900;
    const [mo, d, h, mi, s] = match.slice(2, 7).map(Number);
    const fraction = node.tag === TAG.GENERALIZED_TIME && match[7] ? match[7] : "";
    const ms = fraction ? Math.floor(Number("0" + fraction) * 1000) : 0;
    const date = new Date(Date.UTC(year, mo - 1, d, h, mi, s, ms));
    if (date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) {
      throw new DerError(`${what} is not a valid date`);
    }
    const pad = (n, w = 2) => String(n).padStart(w, "0");
    const text = `${pad(year, 4)}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}${fraction}Z`;
    return { date, text };
  }

  /** The text of a directory string (UTF8, Printable, IA5, Teletex as Latin-1, BMP,
   * Universal); null for another type. */
  function string(node) {
    if (!node || node.cls !== 0 || node.constructed) return null;
    const b = node.body;
    switch (node.tag) {
      case TAG.UTF8:
        return new TextDecoder("utf-8", { fatal: true }).decode(b);
      case TAG.PRINTABLE:
      case TAG.IA5:
      case TAG.T61:
        return String.fromCharCode(...b);
      case TAG.BMP:
        return new TextDecoder("utf-16be", { fatal: true }).decode(b);
      case TAG.UNIVERSAL: {
        let out = "";
        for (let i = 0; i + 3 < b.length; i += 4) {
          out += String.fromCodePoint(((b[i] << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]) >>> 0);
        }
        return out;
      }
      default:
        return null;
    }
  }

  /** Two byte arrays equal, byte for byte. */
  function equalBytes(a, b) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }

  root.NotaryDer = Object.freeze({
    DerError,
    TAG,
    bits,
    boolean,
    context,
    equalBytes,
    expect,
    explicit,
    integer,
    items,
    octets,
    oid,
    parse,
    smallInt,
    string,
    time,
  });
})(globalThis);
