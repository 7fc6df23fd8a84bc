/*
 * OpenTimestamps proofs in the browser: a reader of the .ots binary format (the
 * opentimestamps library's DetachedTimestampFile, as `ots stamp` writes it), the walk from
 * the root to each attestation, and the Bitcoin header checks of Python's
 * `ledger.core.timestamps.ots.check_ots`, step for step:
 *
 *  1 the bytes parse as a detached timestamp file (magic, major version 1, file-hash op,
 *    digest, timestamp tree, nothing after) and serialize back to the same bytes
 *    (attestations and ops in the library's order, each once);
 *  2 the file-hash op is SHA-256 and the digest is the root;
 *  3 every header is 80 bytes and its double SHA-256 meets the target its own bits encode;
 *  4 every header is the one some Bitcoin attestation's message names as its Merkle root,
 *    or one of the headers that follow such a header up to the next checkpoint;
 *  5 each Bitcoin attestation whose header is given is placed under the policy applied.
 *
 * States: invalid (steps 1-4, or an attestation's message is not 32 bytes), verified (an
 * attestation placed), unverifiable (attested, none placed: a missing header, or a policy
 * that cannot place it), pending (calendars' promises only; never verified).
 *
 * Placement (TrustPolicy.place, Checkpoints.link, ledger.core.proof.checkpoints): a policy
 * that names a checkpoint set places a header by it: linked by the given following headers
 * to the next period's checkpoint ("chain"); its hash is a checkpoint's ("checkpoint"); its
 * height's difficulty period has its bits, stands for at least 2**64 hashes a block, and
 * its time lies in that period give or take two days ("era"). A height the set covers is
 * never placed by work when the set refuses it. Otherwise a header whose target is at least as hard as the policy's least work
 * (`max_target`) is placed by "work". A set the page was not given leaves the header
 * "header checked, not placed under a policy" (unverifiable). Checkpoint sets come from
 * `readCheckpoints` (the page's configuration). Ops: sha1, ripemd160, sha256, keccak256
 * (@noble/hashes), append, prepend, reverse, hexlify.
 *
 * Pure: no DOM, no I/O. Exports globalThis.NotaryOts; needs nobleHashes and NotaryCodecs.
 */
(function (root) {
  "use strict";

  const N = root.nobleHashes;
  const C = root.NotaryCodecs;
  const { concat, equal, hex } = C;

  /** A .ots file that does not read (Python: OtsError from `parse_ots`). */
  class OtsError extends Error {
    constructor(reason) {
      super(reason);
      this.name = "OtsError";
      this.reason = reason;
    }
  }

  const MAGIC = Uint8Array.from([
    0x00, 0x4f, 0x70, 0x65, 0x6e, 0x54, 0x69, 0x6d, 0x65, 0x73, 0x74, 0x61, 0x6d, 0x70, 0x73, 0x00,
    0x00, 0x50, 0x72, 0x6f, 0x6f, 0x66, 0x00, 0xbf, 0x89, 0xe2, 0xe8, 0x84, 0xe8, 0x92, 0x94,
  ]);
  const MAX_MSG = 4096;
  const MAX_PAYLOAD = 8192;
  const MAX_URI = 1000;
  const RECURSION_LIMIT = 256;
  const URI_CHARS = /^[A-Za-z0-9\-._/:]*$/;
  const BITCOIN_GENESIS = "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f";
  const TAGS = Object.freeze({
    pending: "83dfe30d2ef90c8e",
    bitcoin: "0588960d73d71901",
    litecoin: "06869a0d73d71b45",
    ethereum: "30fe8087b5c7ead7",
  });
  const HEX_OF = (byte) => byte.toString(16).padStart(2, "0");

  /** Unary ops by tag: [name, fn (bytes -> bytes)], crypto ops with their digest length. */
  const UNARY = {
    0x02: ["sha1", (m) => N.sha1(m), 20],
    0x03: ["ripemd160", (m) => N.ripemd160(m), 20],
    0x08: ["sha256", (m) => N.sha256(m), 32],
    0x67: ["keccak256", (m) => N.keccak_256(m), 32],
    0xf2: ["reverse", (m) => nonEmpty(m, "reverse").slice().reverse(), 0],
    0xf3: ["hexlify", (m) => new TextEncoder().encode(hex(nonEmpty(m, "hexlify"))), 0],
  };
  const BINARY = { 0xf0: ["append", (m, a) => concat(m, a)], 0xf1: ["prepend", (m, a) => concat(a, m)] };
  const CRYPT_TAGS = [0x02, 0x03, 0x08, 0x67];

  function nonEmpty(m, what) {
    if (!m.length) throw new OtsError(`cannot ${what} an empty message`);
    return m;
  }

  // -- reading ------------------------------------------------------------------------------

  class Reader {
    constructor(bytes) {
      this.bytes = bytes;
      this.at = 0;
    }
    take(n) {
      if (this.at + n > this.bytes.length) throw new OtsError("the file is truncated");
      const out = this.bytes.subarray(this.at, this.at + n);
      this.at += n;
      return out;
    }
    byte() {
      return this.take(1)[0];
    }
    varuint() {
      let value = 0;
      for (let shift = 0; ; shift += 7) {
        const b = this.byte();
        if (shift > 49) throw new OtsError("a varuint is too long");
        value += (b & 0x7f) * 2 ** shift;
        if (!(b & 0x80)) return value;
      }
    }
    varbytes(max, min = 0) {
      const n = this.varuint();
      if (n > max || n < min) throw new OtsError(`a length ${n} is out of range`);
      return this.take(n);
    }
    atEnd() {
      return this.at === this.bytes.length;
    }
  }

  function applyOp(op, msg) {
    if (msg.length > MAX_MSG) throw new OtsError("a message is too long");
    const result = op.arg === null ? UNARY[op.tag][1](msg) : BINARY[op.tag][1](msg, op.arg);
    if (result.length > MAX_MSG) throw new OtsError("an op's result is too long");
    return result;
  }

  function readAttestation(r) {
    const tag = hex(r.take(8));
    const payload = r.varbytes(MAX_PAYLOAD);
    const p = new Reader(payload);
    let att;
    if (tag === TAGS.pending) {
      const uri = p.varbytes(MAX_URI);
      const text = String.fromCharCode(...uri);
      if (!URI_CHARS.test(text)) throw new OtsError("a calendar URI has a character not allowed");
      att = { tag, kind: "pending", uri: text };
    } else if (tag === TAGS.bitcoin || tag === TAGS.litecoin || tag === TAGS.ethereum) {
      const kind = Object.keys(TAGS).find((k) => TAGS[k] === tag);
      att = { tag, kind, height: p.varuint() };
    } else {
      return { tag, kind: "unknown", payload };
    }
    if (!p.atEnd()) throw new OtsError("an attestation has trailing bytes");
    return att;
  }

  function readOp(r, tag) {
    if (UNARY[tag]) return { tag, arg: null };
    if (BINARY[tag]) return { tag, arg: r.varbytes(MAX_MSG, 1) };
    throw new OtsError(`unknown operation tag 0x${HEX_OF(tag)}`);
  }

  /** Timestamp.deserialize: {msg, attestations: [...], ops: [[op, timestamp]]}. */
  function readTimestamp(r, msg, limit) {
    if (limit < 1) throw new OtsError("the timestamp is nested too deep");
    const stamp = { msg, attestations: [], ops: [] };
    const one = (tag) => {
      if (tag === 0x00) stamp.attestations.push(readAttestation(r));
      else {
        const op = readOp(r, tag);
        stamp.ops.push([op, readTimestamp(r, applyOp(op, msg), limit - 1)]);
      }
    };
    let tag = r.byte();
    while (tag === 0xff) {
      one(r.byte());
      tag = r.byte();
    }
    one(tag);
    return stamp;
  }

  // -- writing (the library's canonical order) -------------------------------------------------

  function varuint(n) {
    const out = [];
    do {
      let b = n % 128;
      n = Math.floor(n / 128);
      if (n) b |= 0x80;
      out.push(b);
    } while (n);
    return Uint8Array.from(out);
  }
  const varbytes = (b) => concat(varuint(b.length), b);

  function attestationBytes(att) {
    let payload;
    if (att.kind === "pending") payload = varbytes(new TextEncoder().encode(att.uri));
    else if (att.kind === "unknown") payload = att.payload;
    else payload = varuint(att.height);
    return concat(C.fromHexDigits(att.tag), varbytes(payload));
  }

  function compareBytes(a, b) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
    return a.length - b.length;
  }

  function compareAttestations(a, b) {
    if (a.tag !== b.tag) return a.tag < b.tag ? -1 : 1;
    if (a.kind === "pending") return a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0;
    if (a.kind === "unknown") return compareBytes(a.payload, b.payload);
    return a.height - b.height;
  }

  const opBytes = (op) => concat(Uint8Array.of(op.tag), op.arg === null ? new Uint8Array(0) : varbytes(op.arg));
  const compareOps = (a, b) => (a.tag !== b.tag ? a.tag - b.tag : a.arg === null ? 0 : compareBytes(a.arg, b.arg));

  /** Timestamp.serialize of `stamp` (as a set of attestations and a map of ops). */
  function timestampBytes(stamp) {
    const atts = uniqueBy(stamp.attestations, (a) => hex(attestationBytes(a))).sort(compareAttestations);
    const ops = uniqueBy(stamp.ops, ([op]) => hex(opBytes(op)), { keepLast: true }).sort((x, y) => compareOps(x[0], y[0]));
    const parts = [];
    for (const att of atts.slice(0, -1)) parts.push(Uint8Array.of(0xff, 0x00), attestationBytes(att));
    if (atts.length) parts.push(Uint8Array.of(...(ops.length ? [0xff, 0x00] : [0x00])), attestationBytes(atts[atts.length - 1]));
    ops.forEach(([op, sub], i) => {
      if (i < ops.length - 1) parts.push(Uint8Array.of(0xff));
      parts.push(opBytes(op), timestampBytes(sub));
    });
    return concat(...parts);
  }

  function uniqueBy(list, key, { keepLast = false } = {}) {
    const seen = new Map();
    for (const item of list) if (keepLast || !seen.has(key(item))) seen.set(key(item), item);
    return [...seen.values()];
  }

  /**
   * Step 1: a complete .ots file (Uint8Array) -> {hashOp (name), digest, timestamp}.
   * @throws OtsError when it does not parse or is not its own canonical serialization.
   */
  function parseOts(bytes) {
    const r = new Reader(bytes);
    if (!equal(r.take(MAGIC.length), MAGIC)) throw new OtsError("not an OpenTimestamps file: bad magic");
    if (r.varuint() !== 1) throw new OtsError("not an OpenTimestamps file: unsupported major version");
    const tag = r.byte();
    if (!CRYPT_TAGS.includes(tag)) throw new OtsError(`not an OpenTimestamps file: file-hash op 0x${HEX_OF(tag)}`);
    const digest = r.take(UNARY[tag][2]);
    const timestamp = readTimestamp(r, digest, RECURSION_LIMIT);
    if (!r.atEnd()) throw new OtsError("not an OpenTimestamps file: bytes after the timestamp");
    const canonical = concat(MAGIC, varuint(1), Uint8Array.of(tag), digest, timestampBytes(timestamp));
    if (!equal(canonical, bytes)) throw new OtsError("not the canonical serialization of its timestamp");
    return { hashOp: UNARY[tag][0], digest, timestamp };
  }

  /** Every (message, attestation) of the tree, as Timestamp.all_attestations walks it. */
  function allAttestations(stamp, out = []) {
    for (const att of stamp.attestations) out.push([stamp.msg, att]);
    for (const [, sub] of stamp.ops) allAttestations(sub, out);
    return out;
  }

  // -- the check ---------------------------------------------------------------------------------

  const display = (hash) => hex(C.reversed(hash));

  function headersOf(raw) {
    return raw.map((bytes) => {
      let header;
      let target;
      try {
        header = C.parseHeader(bytes);
        target = C.bitsToTarget(header.bits);
      } catch (exc) {
        if (exc instanceof C.FormatError) throw new OtsError(`a header does not parse: ${exc.message}`);
        throw exc;
      }
      if (C.uintLE(header.hash) > target) throw new OtsError(`header ${display(header.hash)} misses its own target`);
      return { ...header, target };
    });
  }

  const RETARGET_INTERVAL = 2016;
  const TIME_SLACK_S = 2 * 86400;
  const MIN_PERIOD_WORK = 1n << 64n;

  /**
   * A checkpoint set from the page's configuration: `records` is base64 of 40-byte records
   * (block hash in internal order, bits and time as little-endian uint32), one per
   * difficulty period from height `first`, every RETARGET_INTERVAL blocks.
   */
  function readCheckpoints(name, first, records) {
    const raw = Uint8Array.from(root.atob(records), (c) => c.charCodeAt(0));
    if (raw.length % 40) throw new RangeError(`checkpoint set ${name} is not 40-byte records`);
    const entries = [];
    for (let at = 0; at < raw.length; at += 40) {
      const rec = raw.subarray(at, at + 40);
      entries.push({
        height: first + (at / 40) * RETARGET_INTERVAL,
        hash: hex(rec.subarray(0, 32)),
        bits: Number(C.uintLE(rec.subarray(32, 36))),
        time: Number(C.uintLE(rec.subarray(36, 40))),
      });
    }
    const last = entries.length ? entries[entries.length - 1].height + RETARGET_INTERVAL - 1 : -1;
    return Object.freeze({ name, entries, last, byHash: new Map(entries.map((e) => [e.hash, e])) });
  }

  function periodStart(set, height) {
    const i = set.entries.length ? Math.floor((height - set.entries[0].height) / RETARGET_INTERVAL) : -1;
    return i >= 0 && i < set.entries.length ? set.entries[i] : null;
  }

  const bitsText = (bits) => "0x" + bits.toString(16).padStart(8, "0");

  /** Checkpoints.place: {basis, detail} or why the set cannot place the header. */
  function placeByCheckpoints(set, header, height) {
    const exact = set.byHash.get(hex(header.hash));
    if (exact) {
      if (exact.height !== height) return `the header is checkpoint ${exact.height}, not block ${height}`;
      return { basis: "checkpoint", detail: `block ${height} is a ${set.name} checkpoint` };
    }
    const start = periodStart(set, height);
    if (start === null) return `block ${height} is outside the ${set.name} checkpoints (up to ${set.last})`;
    if (start.height === height) return `block ${height} is a ${set.name} checkpoint, and this header is not it`;
    if (header.bits !== start.bits) {
      return (
        `bits ${bitsText(header.bits)} are not those of block ${height}'s difficulty period` +
        ` (${bitsText(start.bits)}, from block ${start.height})`
      );
    }
    const work = (1n << 256n) / (C.bitsToTarget(start.bits) + 1n);
    const log2 = Math.log2(Number(work)).toFixed(1);
    if (work < MIN_PERIOD_WORK) {
      return `block ${height}'s difficulty period stands for 2**${log2} hashes a block, below the 2**64 needed to place a header by its period`;
    }
    const end = periodStart(set, start.height + RETARGET_INTERVAL);
    if (header.timestamp < start.time - TIME_SLACK_S || (end !== null && header.timestamp > end.time + TIME_SLACK_S)) {
      return `the header's time lies outside block ${height}'s difficulty period`;
    }
    return {
      basis: "era",
      detail:
        `bits ${bitsText(header.bits)} are those of its difficulty period (blocks` +
        ` ${start.height}-${start.height + RETARGET_INTERVAL - 1}, ${set.name}): as costly to` +
        ` forge as one block of that period, about 2**${log2} hashes`,
    };
  }

  /** Checkpoints.link: {placement, used} when `following` (headers by their previous
   * block's hash, display hex) leads from `header` to the next period's checkpoint. */
  function link(set, header, height, following) {
    const target = set.entries.find((e) => e.height === (Math.floor(height / RETARGET_INTERVAL) + 1) * RETARGET_INTERVAL);
    if (!target) return null;
    const used = [];
    let current = header;
    for (let at = height; at < target.height; at++) {
      const next = following.get(hex(current.hash));
      if (!next) return null;
      used.push(next);
      current = next;
    }
    if (hex(current.hash) !== target.hash) return null;
    const detail =
      `linked by ${used.length} header(s) to the ${set.name} checkpoint at block` +
      ` ${target.height}: it is that chain's block ${height}`;
    return { placement: { basis: "chain", detail }, used };
  }

  /** TrustPolicy.place for the page (module comment): {basis, detail} or a reason. */
  function place(header, height, policy, sets) {
    let reason = "no checkpoints";
    if (policy.checkpoints) {
      const set = sets[policy.checkpoints];
      if (!set) {
        return `header checked, not placed under a policy (this page was not given policy ${policy.name}'s checkpoints ${policy.checkpoints})`;
      }
      const placed = placeByCheckpoints(set, header, height);
      if (typeof placed !== "string" || periodStart(set, height) !== null) return placed;
      reason = placed;
    }
    if (header.target <= policy.maxTarget) {
      return { basis: "work", detail: `its target is at least as hard as policy ${policy.name}'s` };
    }
    return `${reason}; and its work is below policy ${policy.name}'s least work per header`;
  }

  /** Steps 4-5 for one Bitcoin attestation: [outcome, the following headers a link used]. */
  function attestationOutcome(msg, height, headers, following, policy, sets) {
    const out = { height, blockHash: null, time: null, basis: null };
    if (msg.length !== 32) return [{ ...out, state: "invalid", reason: "its message is not 32 bytes" }, []];
    const header = headers.find((h) => equal(h.merkleRoot, msg));
    if (!header) return [{ ...out, state: "unverifiable", reason: "its header is missing" }, []];
    Object.assign(out, { blockHash: display(header.hash), time: header.timestamp });
    if (policy === null || policy.genesisHex !== BITCOIN_GENESIS || policy.pow !== "sha256d") {
      const reason = policy === null ? "header checked, not placed under a policy: no Bitcoin mainnet policy" : `policy ${policy.name} is not for Bitcoin mainnet`;
      return [{ ...out, state: "unverifiable", reason }, []];
    }
    const set = policy.checkpoints ? sets[policy.checkpoints] : null;
    const linked = set ? link(set, header, height, following) : null;
    if (linked) return [{ ...out, state: "verified", basis: "chain", reason: linked.placement.detail }, linked.used];
    const placed = place(header, height, policy, sets);
    if (typeof placed === "string") {
      const reason = placed.startsWith("header checked") ? placed : `policy ${policy.name} cannot place it: ${placed}`;
      return [{ ...out, state: "unverifiable", reason }, []];
    }
    return [{ ...out, state: "verified", basis: placed.basis, reason: placed.detail }, []];
  }

  const describeAttestation = (a) => `Bitcoin block ${a.height}${a.blockHash ? ` (${a.blockHash})` : ""}: ${a.reason}`;

  /**
   * check_ots: one stamp ({ots: bytes, headers: [80-byte Uint8Array]}) over `rootBytes` under
   * `policy` (NotaryVerify.makePolicy form, or null), with the checkpoint sets at hand
   * (`sets`: name -> readCheckpoints) -> {state, policy, attestations, pending (calendar
   * URIs), reasons}. Never throws for bad data (that is "invalid").
   */
  function checkOts(stamp, rootBytes, policy, sets = {}) {
    const policyName = policy === null ? null : policy.name;
    let parsed;
    let headers;
    try {
      parsed = parseOts(stamp.ots);
      if (parsed.hashOp !== "sha256") throw new OtsError(`the file-hash op is ${parsed.hashOp}, not sha256`);
      if (!equal(parsed.digest, rootBytes)) throw new OtsError(`stamps ${hex(parsed.digest)}, not the root ${hex(rootBytes)}`);
      headers = headersOf(stamp.headers);
    } catch (exc) {
      // As Python's parse_ots: whatever the bytes make the reader raise, they are invalid.
      const reason = exc instanceof OtsError ? exc.reason : `not an OpenTimestamps file: ${exc.name}: ${exc.message}`;
      return { state: "invalid", policy: policyName, attestations: [], pending: [], reasons: [reason] };
    }
    const all = allAttestations(parsed.timestamp);
    const bitcoin = all.filter(([, a]) => a.kind === "bitcoin").sort((x, y) => x[1].height - y[1].height);
    const pending = all.filter(([, a]) => a.kind === "pending").map(([, a]) => a.uri).sort();
    const others = all.filter(([, a]) => a.kind !== "bitcoin" && a.kind !== "pending").map(([, a]) => `${a.kind} attestation: not checked (not a Bitcoin attestation)`);
    const following = new Map(headers.map((h) => [hex(h.prevHash), h]));
    const used = new Set();
    const attestations = bitcoin.map(([msg, a]) => {
      const [outcome, linked] = attestationOutcome(msg, a.height, headers, following, policy, sets);
      linked.forEach((h) => used.add(h));
      return outcome;
    });
    const unused = headers.find((h) => !used.has(h) && !bitcoin.some(([msg]) => equal(h.merkleRoot, msg)));
    if (unused) {
      const reason = `Merkle root mismatch: header ${display(unused.hash)} is no attestation's message`;
      return { state: "invalid", policy: policyName, attestations: [], pending, reasons: [reason] };
    }
    const states = new Set(attestations.map((a) => a.state));
    const state = states.has("invalid") ? "invalid" : states.has("verified") ? "verified" : states.size || !pending.length ? "unverifiable" : "pending";
    const reasons = [...attestations.filter((a) => a.state !== "verified").map(describeAttestation), ...others];
    return { state, policy: policyName, attestations, pending, reasons };
  }

  root.NotaryOts = Object.freeze({
    BITCOIN_GENESIS,
    OtsError,
    allAttestations,
    checkOts,
    describeAttestation,
    parseOts,
    readCheckpoints,
  });
})(globalThis);
