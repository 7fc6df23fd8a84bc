/*
 * Bytes, hashes and the byte formats a proof bundle carries, for the verification page:
 * the JavaScript twins of ledger/core (entry, directory block, Factom Merkle rules,
 * hashing; commitments, aggregation trees and the version-2 entries) and of the
 * proof-of-work codecs (transaction, header, compact bits, Bitcoin Merkle paths). Each
 * throws FormatError with the text of the Python error it mirrors.
 * Pure; exports globalThis.NotaryCodecs; needs globalThis.nobleHashes ({sha256, sha512}).
 */
(function (root) {
  "use strict";

  const { sha256: nobleSha256, sha512: nobleSha512 } = root.nobleHashes;

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

  // -- bytes and hashes -----------------------------------------------------------------

  const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

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

  /**
   * Bitcoin's rule (`pow.merkle.root_from_path`): the root a path leads to. A step with the
   * running node on the right of a sibling equal to it is refused: that position exists
   * only through the duplicated last node (CVE-2012-2459).
   */
  function rootFromPath(txid, index, path) {
    if (index < 0n || index >> BigInt(path.length)) {
      throw new FormatError(`index ${index} does not fit a path of ${path.length} levels`);
    }
    let current = txid;
    path.forEach((sibling, level) => {
      if (sibling.length !== 32) {
        throw new FormatError(`path element ${level} is ${sibling.length} bytes, not 32`);
      }
      if ((index >> BigInt(level)) & 1n) {
        if (equal(sibling, current)) {
          throw new FormatError(
            `position ${index} exists only through the duplicated last node` +
              ` (path element ${level} is the node's own copy)`
          );
        }
        current = sha256d(concat(sibling, current));
      } else {
        current = sha256d(concat(current, sibling));
      }
    });
    return current;
  }

  // -- commitments and aggregation trees (ledger/core/commitment.py, aggregation.py) --------

  const COMMITMENT_TAG = ascii("notary:commitment:v1");

  /** `document_commitment`: SHA256("notary:commitment:v1" || nonce || document SHA-256). */
  function documentCommitment(documentSha256, nonce) {
    if (documentSha256.length !== 32) throw new FormatError("document SHA-256 must be 32 bytes");
    if (nonce.length !== 32) throw new FormatError("nonce must be 32 bytes");
    return sha256(concat(COMMITMENT_TAG, nonce, documentSha256));
  }

  const MAX_TREE_SIZE = 1n << 40n;
  const leafHash = (data) => sha256(concat(Uint8Array.of(0), data));
  const nodeHash = (left, right) => sha256(concat(Uint8Array.of(1), left, right));

  /** `root_from_inclusion` (RFC 9162 section 2.1.3.2): index, size BigInts; path bytes. */
  function rootFromInclusion(leaf, index, size, path) {
    if (size < 1n || size > MAX_TREE_SIZE) {
      throw new FormatError(`tree size ${size} is not between 1 and ${MAX_TREE_SIZE}`);
    }
    if (index < 0n || index >= size) {
      throw new FormatError(`leaf index ${index} is outside a tree of ${size} leaves`);
    }
    let fn = index;
    let sn = size - 1n;
    let node = leafHash(leaf);
    path.forEach((sibling, step) => {
      if (sibling.length !== 32) throw new FormatError(`audit path element ${step} is not 32 bytes`);
      if (sn === 0n) {
        throw new FormatError(
          `audit path has ${path.length} hashes, more than leaf ${index} of ${size} needs`
        );
      }
      if (fn & 1n || fn === sn) {
        node = nodeHash(sibling, node);
        while (!(fn & 1n) && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      } else {
        node = nodeHash(node, sibling);
      }
      fn >>= 1n;
      sn >>= 1n;
    });
    if (sn !== 0n) {
      throw new FormatError(`audit path has ${path.length} hashes, fewer than leaf ${index} of ${size} needs`);
    }
    return node;
  }

  /** `Entry.marshal` (factom-formats 1.1): version 0, chain ID, ExtIDs, content. */
  function marshalEntry(chainId, extIds, content) {
    const section = concat(...extIds.map((x) => concat(Uint8Array.of(x.length >> 8, x.length & 0xff), x)));
    return concat(Uint8Array.of(0), chainId, Uint8Array.of(section.length >> 8, section.length & 0xff), section, content);
  }

  /** `notary_entry.commitment_entry`: the bytes of the entry publishing one commitment. */
  function commitmentEntry(chainId, commitment) {
    const text = hex(commitment);
    const content = `{"commitment":"${text}","v":2}`;
    return marshalEntry(chainId, [ascii("notary:commitment:v2"), ascii(text)], ascii(content));
  }

  /** `notary_entry.batch_entry`: the bytes of the entry publishing a root and a size. */
  function batchEntry(chainId, root, size) {
    const text = hex(root);
    const content = `{"root":"${text}","size":${size},"v":2}`;
    return marshalEntry(chainId, [ascii("notary:batch:v2"), ascii(text), ascii(String(size))], ascii(content));
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
    const timestamp = r.uint(4);
    const bits = r.uint(4);
    return { prevHash, merkleRoot, timestamp, bits, hash: sha256d(raw) };
  }

  root.NotaryCodecs = Object.freeze({
    ByteReader,
    FormatError,
    ascii,
    batchEntry,
    bitLength,
    bitsHex,
    bitsToTarget,
    commitmentEntry,
    concat,
    difficultyTarget,
    documentCommitment,
    entryHash,
    equal,
    factomMerkleRoot,
    fromHexDigits,
    hex,
    includesBytes,
    merkleNode,
    parseDirectoryBlock,
    parseEntry,
    parseHeader,
    parseTransaction,
    reversed,
    rootFromInclusion,
    rootFromPath,
    sha256,
    sha256d,
    uintBE,
    uintLE,
    walkBranch,
  });
})(globalThis);
