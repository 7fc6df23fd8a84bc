/*
 * Bundle format version 1 (docs/proof-bundle.md): its parser and steps 1-11, each the
 * twin of the check of the same number in ledger/core/proof/ (and of the receipt,
 * directory block, transaction and header checks it calls), with the same reasons and
 * the same reported details; steps 2 and 3 are skipped (the entry carries the document
 * hash itself). Registers itself with NotaryVerify.registerVersion and exports its
 * parser and checks as globalThis.NotaryBundleV1, for version 2 (bundle_v2.js).
 */
(function (root) {
  "use strict";

  const {
    FormatError,
    ascii,
    bitLength,
    bitsHex,
    bitsToTarget,
    concat,
    entryHash,
    equal,
    hex,
    includesBytes,
    merkleNode,
    parseDirectoryBlock,
    parseEntry,
    parseHeader,
    parseTransaction,
    reversed,
    rootFromPath,
    sha256,
    sha256d,
    uintBE,
    uintLE,
    walkBranch,
  } = root.NotaryCodecs;
  const { loadsJson, reprStr } = root.NotaryPyJson;
  const { ProofError, fields, namesChain, registerVersion } = root.NotaryVerify;
  const { addressField, hexField, hexList, nodeList, object, textField, uintField } = fields;
  const noble = root.nobleHashes;

  /** `ReceiptError`: a receipt check (its own step numbers 1-5) that failed. */
  class ReceiptError extends FormatError {
    constructor(message, { step, expected = null, computed = null }) {
      super(`receipt step ${step}: ${message}`, { expected, computed });
      this.receiptStep = step;
      this.bare = `receipt step ${step}: ${message}`;
    }
  }

  // -- the parser (step 0 after `format` and `version`) ------------------------------------

  function txProof(obj) {
    return {
      transaction: hexField(obj, "transaction"),
      txid: reversed(hexField(obj, "txid")),
      txIndex: uintField(obj, "tx_index"),
      merklePath: hexList(obj.get("merkle_path"), "merkle_path"),
    };
  }

  /** Version 1's parser: raw bytes of whatever length the JSON held (steps check them). */
  const TX_KEYS = ["transaction", "txid", "tx_index", "merkle_path"];
  const RECEIPT_KEYS = [
    "entryhash", "merklebranch", "entryblockkeymr", "directoryblockkeymr", "directoryblockheight",
  ];
  const ANCHOR_KEYS = [...TX_KEYS, "chain", "headers"];
  const CONTRACT_KEYS = [
    ...TX_KEYS, "contractaddress", "dbheightmin", "dbheightmax", "windowmr", "merklebranch", "header_index",
  ];
  /** Version 1's top-level keys, exactly (docs/proof-bundle.md, "Layout"). */
  const V1_KEYS = Object.freeze([
    "format", "version", "document", "entry", "receipt", "directory_block", "anchor", "contract",
  ]);

  function parseV1(top) {
    const receipt = object(top.get("receipt"), "receipt", RECEIPT_KEYS);
    const anchor = object(top.get("anchor"), "anchor", ANCHOR_KEYS);
    const contract = top.get("contract");
    const bundle = {
      documentSha256: hexField(object(top.get("document"), "document", ["sha256"]), "sha256"),
      entry: hexField(object(top.get("entry"), "entry", ["raw"]), "raw"),
      receipt: {
        entryHash: hexField(receipt, "entryhash"),
        branch: nodeList(receipt.get("merklebranch"), "receipt merklebranch"),
        entryBlockKeyMr: hexField(receipt, "entryblockkeymr"),
        directoryBlockKeyMr: hexField(receipt, "directoryblockkeymr"),
        directoryBlockHeight: uintField(receipt, "directoryblockheight"),
      },
      directoryBlock: hexField(object(top.get("directory_block"), "directory_block", ["raw"]), "raw"),
      anchor: {
        chain: textField(anchor, "chain"),
        tx: txProof(anchor),
        headers: hexList(anchor.get("headers"), "anchor headers"),
      },
      contract: null,
    };
    if (contract !== null) bundle.contract = contractPart(object(contract, "contract", CONTRACT_KEYS));
    return bundle;
  }

  function contractPart(obj) {
    return {
      contractAddress: addressField(obj, "contractaddress"),
      heightMin: uintField(obj, "dbheightmin"),
      heightMax: uintField(obj, "dbheightmax"),
      windowMr: hexField(obj, "windowmr"),
      branch: nodeList(obj.get("merklebranch"), "contract merklebranch"),
      tx: txProof(obj),
      headerIndex: uintField(obj, "header_index"),
    };
  }

  // -- steps 1-11 -----------------------------------------------------------------------
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
      throw asProofError(exc, 4, "entry bytes do not parse: ");
    }
    if (!carries(entry, b.documentSha256)) throw new ProofError(4, "the entry does not carry the document hash");
    checkReceiptEntryHash(b);
    return { detail: ["entry ", H(entryHash(b.entry)), " (chain ", H(entry.chainId), ") carries the hash"] };
  }

  /** The end of step 4, both versions: the entry hashes to the receipt's entry hash. */
  function checkReceiptEntryHash(b) {
    const computed = entryHash(b.entry);
    if (!equal(computed, b.receipt.entryHash)) {
      throw new ProofError(4, "the entry does not hash to the receipt's entry hash", {
        expected: b.receipt.entryHash,
        computed,
      });
    }
  }

  function asProofError(exc, step, prefix) {
    if (!(exc instanceof FormatError)) throw exc;
    return new ProofError(step, prefix + exc.message);
  }

  function check32(value, what) {
    if (value.length !== 32) throw new FormatError(`${what} must be exactly 32 bytes`);
  }

  /** Step 5: `verify_receipt` over the bundle's receipt and entry (formats 6). */
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
        throw new ProofError(5, exc.bare, { expected: exc.expected, computed: exc.computed });
      }
      throw asProofError(exc, 5, "malformed receipt: ");
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
      throw asProofError(exc, 6, "directory block does not parse: ");
    }
    if (!equal(dblock.keyMr, b.receipt.directoryBlockKeyMr)) {
      throw new ProofError(6, "the directory block's KeyMR is not the receipt's", {
        expected: b.receipt.directoryBlockKeyMr,
        computed: dblock.keyMr,
      });
    }
    if (BigInt(dblock.height) !== b.receipt.directoryBlockHeight) {
      throw new ProofError(
        6,
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
    const tx = parseTx(ctx.bundle.anchor.tx.transaction, 7);
    const anchors = tx.payloads
      .filter((p) => p.length === 40 && equal(p.subarray(0, 2), ANCHOR_TAG))
      .map((p) => ({ height: uintBE(p.subarray(2, 8)), keyMr: p.subarray(8) }));
    if (anchors.some((a) => a.height === dblock.height && equal(a.keyMr, dblock.keyMr))) {
      return { detail: [`"Fa" height ${dblock.height} KeyMR `, H(dblock.keyMr)] };
    }
    if (!anchors.length) throw new ProofError(7, 'the transaction has no "Fa" anchor output');
    const first = anchors[0];
    if (first.height !== dblock.height) {
      throw new ProofError(7, `the anchor is for height ${first.height}, not ${dblock.height}`);
    }
    throw new ProofError(7, "the anchor names another directory block KeyMR", {
      expected: dblock.keyMr,
      computed: first.keyMr,
    });
  }

  /** Shared by steps 8 and 11: txid, Merkle path, the header's Merkle root. */
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
    } catch (exc) {
      if (!(exc instanceof FormatError)) throw exc;
      throw new ProofError(step, `header ${index}: ${exc.message}`, { index });
    }
    try {
      root = rootFromPath(txid, tx.txIndex, tx.merklePath);
    } catch (exc) {
      if (!(exc instanceof FormatError)) throw exc;
      throw new ProofError(step, `the transaction's Merkle path: ${exc.message}`, { index });
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
    if (!anchor.headers.length) throw new ProofError(8, "the bundle has no anchor block header");
    const header = checkInclusion(anchor.tx, anchor.headers[0], 8, 0);
    return {
      detail: [
        "transaction ",
        H(reversed(anchor.tx.txid)),
        ` is #${anchor.tx.txIndex} in block `,
        H(reversed(header.hash)),
      ],
    };
  }

  /** The proof-of-work hash of an 80-byte header (`ledger.core.pow.work.pow_hash`). */
  function powHash(raw, pow) {
    if (pow === "scrypt") return noble.scrypt(raw, raw, { N: 1024, r: 1, p: 1, dkLen: 32 });
    return sha256d(raw);
  }

  const isZero = (bytes) => bytes.every((b) => b === 0);

  function checkProofOfWork(ctx) {
    const { bundle, policy } = ctx;
    if (!namesChain(policy, bundle.anchor.chain)) {
      throw new ProofError(
        9,
        `anchored in chain ${reprStr(bundle.anchor.chain)}; policy ${policy.name} trusts` +
          ` ${reprStr(policy.chain)}`
      );
    }
    ctx.state.headers = bundle.anchor.headers.map((raw, i) => {
      let header, target;
      try {
        header = parseHeader(raw);
        target = bitsToTarget(header.bits);
      } catch (exc) {
        if (!(exc instanceof FormatError)) throw exc;
        throw new ProofError(9, `header ${i}: ${exc.message}`, { index: i });
      }
      if (target > policy.maxTarget) {
        throw new ProofError(
          9,
          `header ${i}: work is short (bits ${bitsHex(header.bits)} are easier than policy` +
            ` ${policy.name} allows)`,
          { index: i }
        );
      }
      if (uintLE(powHash(raw, policy.pow)) > target) {
        throw new ProofError(9, `header ${i}: ${policy.pow} hash does not meet its target`, { index: i });
      }
      if (isZero(header.prevHash) && policy.genesis !== null && !equal(header.hash, policy.genesis)) {
        throw new ProofError(9, `header ${i} is the genesis block of another chain`, {
          index: i,
          expected: policy.genesis,
          computed: header.hash,
        });
      }
      return { ...header, target };
    });
    const works = ctx.state.headers.map((h) => (1n << 256n) / (h.target + 1n));
    const least = works.length ? works.reduce((a, b) => (b < a ? b : a)) : 0n;
    return {
      detail: [
        `${works.length} headers of chain ${reprStr(policy.chain)} (${policy.pow}),` +
          ` each >= policy ${policy.name}'s least work; the least is 2^${bitLength(least) - 1} hashes`,
      ],
    };
  }

  function checkLinks(ctx) {
    const { headers } = ctx.state;
    const { policy } = ctx;
    for (let i = 1; i < headers.length; i++) {
      const previous = headers[i - 1].hash;
      if (!equal(headers[i].prevHash, previous)) {
        throw new ProofError(10, `header ${i} does not link to header ${i - 1}`, {
          index: i,
          expected: previous,
          computed: headers[i].prevHash,
        });
      }
    }
    if (headers.length < policy.confirmations) {
      throw new ProofError(
        10,
        `${headers.length} confirmations, policy ${policy.name} needs ${policy.confirmations}`
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
    if (c === null && ctx.policy.requireWindow) {
      throw new ProofError(11, `policy ${ctx.policy.name} requires a window anchor`);
    }
    if (c === null) return { detail: ["no window anchor in this bundle"], skipped: true };
    const { dblock, headers } = ctx.state;
    checkWindowCommitment(c, dblock);
    checkWindowBranch(c, dblock);
    if (c.headerIndex >= BigInt(headers.length)) {
      throw new ProofError(11, `header_index ${c.headerIndex} is not in the bundle`);
    }
    const at = Number(c.headerIndex);
    checkInclusion(c.tx, ctx.bundle.anchor.headers[at], 11, at);
    if (headers.length - at < ctx.policy.confirmations) {
      throw new ProofError(11, "the contract block lacks confirmations");
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
    const tx = parseTx(c.tx.transaction, 11);
    let stated;
    try {
      if (c.contractAddress.length !== 20) throw new FormatError("a contract address is 20 bytes");
      const low = height6(c.heightMin);
      const high = height6(c.heightMax);
      if (c.heightMin > c.heightMax) throw new FormatError("window lowest height above its highest height");
      if (c.windowMr.length !== 32) throw new FormatError("window Merkle root must be exactly 32 bytes");
      stated = concat(WINDOW_TAG, c.contractAddress, low, high, c.windowMr);
    } catch (exc) {
      throw asProofError(exc, 11, "malformed window: ");
    }
    const committed = tx.payloads.filter((p) => p.length === 66 && equal(p.subarray(0, 2), WINDOW_TAG));
    if (!includesBytes(committed, stated)) {
      throw new ProofError(11, "the contract transaction does not commit to this window");
    }
    const height = BigInt(dblock.height);
    if (!(c.heightMin <= height && height <= c.heightMax)) {
      throw new ProofError(11, `height ${dblock.height} is outside ${c.heightMin}..${c.heightMax}`);
    }
  }

  function checkWindowBranch(c, dblock) {
    let nodes, top;
    try {
      nodes = c.branch.map(merkleNode);
      top = walkBranch(dblock.keyMr, nodes);
    } catch (exc) {
      throw asProofError(exc, 11, "window branch: ");
    }
    if (!equal(top, c.windowMr)) {
      throw new ProofError(11, "the branch does not end at the window root", {
        expected: c.windowMr,
        computed: top,
      });
    }
    const depth = bitLength(c.heightMax - c.heightMin);
    const position = branchIndex(dblock.keyMr, nodes);
    const wanted = BigInt(dblock.height) - c.heightMin;
    if (nodes.length !== depth || position !== wanted) {
      throw new ProofError(
        11,
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

  const step = (number, title, check) => ({ step: number, title, check });
  const V1_SKIPPED = "version 1: the entry carries the document hash itself";
  const skippedInV1 = () => ({ detail: [V1_SKIPPED], skipped: true });

  /** Steps 5-11: the same checks for every version. */
  const LEDGER_AND_ANCHOR_STEPS = Object.freeze([
    step(5, "Merkle steps", checkReceipt),
    step(6, "directory block", checkDirectoryBlock),
    step(7, "anchor payload", checkAnchorPayload),
    step(8, "anchor transaction", checkAnchorInclusion),
    step(9, "proof of work", checkProofOfWork),
    step(10, "header links", checkLinks),
    step(11, "window anchor", checkContract),
  ]);

  const describe = (bundle) => ({
    documentSha256: hex(bundle.documentSha256),
    height: bundle.receipt.directoryBlockHeight.toString(),
    chain: bundle.anchor.chain,
  });

  /** `format_utc`: "YYYY-MM-DD HH:MM:SS UTC", or the raw count past Python's datetime. */
  const formatUtc = (s) =>
    s <= LAST_DATETIME_S
      ? new Date(s * 1000).toISOString().slice(0, 19).replace("T", " ") + " UTC"
      : `${s} s after the Unix epoch`;

  /** The verdict's date (`verify._verdict`) and its words (`Verdict.lines`). */
  function verdictOf(policy, state) {
    const times = state.headers.map((h) => h.timestamp);
    const span = policy.medianTimeSpan;
    const median =
      span !== null && times.length >= span ? times.slice(0, span).sort((a, b) => a - b)[Math.floor(span / 2)] : null;
    const lines = [
      policy.note ? `Policy ${policy.name}: ${policy.note}.` : `Policy ${policy.name}.`,
      `The document existed no later than ${formatUtc(times[0])} (the anchor block's header time).`,
    ];
    if (median !== null) {
      lines.push(
        `By the median time of ${span} headers from the anchor block on: no later than ${formatUtc(median)}.`
      );
    }
    lines.push(`${times.length} confirmations (${policy.confirmations} required).`);
    lines.push(
      `The directory block's own time, ${formatUtc(state.dblock.timestampS)}, is the operator's claim,` +
        " not the proof's."
    );
    return { anchorTimeS: times[0], medianTimeS: median, lines };
  }

  const facts = (bundle, state, policy) => {
    const verdict = verdictOf(policy, state);
    return {
      documentSha256: hex(bundle.documentSha256),
      height: state.dblock.height,
      startedS: state.dblock.timestampS,
      chain: bundle.anchor.chain,
      confirmations: state.headers.length,
      window: bundle.contract !== null,
      commitment: null,
      aggregation: null,
      policy: policy.name,
      independent: policy.independent,
      anchorTimeS: verdict.anchorTimeS,
      medianTimeS: verdict.medianTimeS,
      verdict: verdict.lines,
    };
  };

  registerVersion(1, {
    keys: V1_KEYS,
    parse: parseV1,
    steps: [
      step(1, "file hash", checkFileHash),
      step(2, "commitment", skippedInV1),
      step(3, "aggregation", skippedInV1),
      step(4, "entry", checkEntry),
      ...LEDGER_AND_ANCHOR_STEPS,
    ],
    describe,
    facts,
  });

  root.NotaryBundleV1 = Object.freeze({
    LEDGER_AND_ANCHOR_STEPS,
    V1_KEYS,
    asProofError,
    checkFileHash,
    checkReceiptEntryHash,
    describe,
    facts,
    parse: parseV1,
    step,
  });
})(globalThis);
