/*
 * Bundle format version 2 (docs/proof-bundle.md): the entry publishes the document's
 * commitment, or the root and size of an aggregation tree holding it. Its parser (version
 * 1's fields plus `commitment` and `aggregation`) and steps 2-4, the twins of
 * ledger/core/proof/document_steps.py with the same reasons and details; steps 1 and 5-11
 * are version 1's checks (bundle_v1.js). Registers itself with NotaryVerify.registerVersion.
 */
(function (root) {
  "use strict";

  const {
    FormatError,
    ascii,
    batchEntry,
    commitmentEntry,
    documentCommitment,
    entryHash,
    equal,
    hex,
    parseEntry,
    rootFromInclusion,
  } = root.NotaryCodecs;
  const { ProofError, fields, registerVersion } = root.NotaryVerify;
  const { hexField, hexList, object, uintField } = fields;
  const V1 = root.NotaryBundleV1;

  const H = (bytes) => ({ hex: hex(bytes) });

  // -- the parser: `commitment` and `aggregation` first, as ProofBundle.from_json reads them --

  function parseV2(top) {
    const nonce = hexField(object(top.get("commitment"), "commitment", ["nonce"]), "nonce");
    const value = top.get("aggregation");
    let aggregation = null;
    if (value !== null) {
      const obj = object(value, "aggregation", ["leaf_index", "tree_size", "audit_path"]);
      aggregation = {
        leafIndex: uintField(obj, "leaf_index"),
        treeSize: uintField(obj, "tree_size"),
        auditPath: hexList(obj.get("audit_path"), "audit_path"),
      };
    }
    return { ...V1.parse(top), nonce, aggregation };
  }

  // -- what the entry's external IDs state (`_stated`) ---------------------------------------

  const COMMITMENT_TAG = ascii("notary:commitment:v2");
  const BATCH_TAG = ascii("notary:batch:v2");
  const HASH_HEX = /^[0-9a-f]{64}$/;
  const SIZE = /^[1-9][0-9]{0,39}$/; // 40 digits at most, as Python's `_SIZE`
  const text = (bytes) => String.fromCharCode(...bytes);

  /** {commitment} or {root, size} the entry names in notary_entry's form; {} otherwise. */
  function stated(rawEntry) {
    let extIds;
    try {
      extIds = parseEntry(rawEntry).extIds;
    } catch (exc) {
      if (!(exc instanceof FormatError)) throw exc;
      return {};
    }
    const isHash = (x) => x.length === 64 && HASH_HEX.test(text(x));
    if (extIds.length === 2 && equal(extIds[0], COMMITMENT_TAG) && isHash(extIds[1])) {
      return { commitment: fromHex(extIds[1]) };
    }
    if (
      extIds.length === 3 &&
      equal(extIds[0], BATCH_TAG) &&
      isHash(extIds[1]) &&
      SIZE.test(text(extIds[2]))
    ) {
      return { root: fromHex(extIds[1]), size: BigInt(text(extIds[2])) };
    }
    return {};
  }

  const fromHex = (digits) => Uint8Array.from(text(digits).match(/../g), (x) => parseInt(x, 16));

  // -- steps 2-4 ----------------------------------------------------------------------------

  function checkCommitment(ctx) {
    const b = ctx.bundle;
    let commitment;
    try {
      commitment = documentCommitment(b.documentSha256, b.nonce);
    } catch (exc) {
      throw V1.asProofError(exc, 2, "malformed: ");
    }
    const published = stated(b.entry).commitment;
    if (b.aggregation === null && published !== undefined && !equal(published, commitment)) {
      throw new ProofError(2, "the entry publishes another commitment", {
        expected: published,
        computed: commitment,
      });
    }
    ctx.state.commitment = commitment;
    return { detail: ["commitment ", H(commitment), " of the document hash and its nonce"] };
  }

  function checkAggregation(ctx) {
    const agg = ctx.bundle.aggregation;
    if (agg === null) return { detail: ["per-document entry: no aggregation tree"], skipped: true };
    let treeRoot;
    try {
      treeRoot = rootFromInclusion(ctx.state.commitment, agg.leafIndex, agg.treeSize, agg.auditPath);
    } catch (exc) {
      throw V1.asProofError(exc, 3, "");
    }
    const published = stated(ctx.bundle.entry);
    if (published.size !== undefined && published.size !== agg.treeSize) {
      throw new ProofError(3, `the tree has ${agg.treeSize} leaves; the entry's batch has ${published.size}`);
    }
    if (published.root !== undefined && !equal(published.root, treeRoot)) {
      throw new ProofError(
        3,
        `the audit path of leaf ${agg.leafIndex} of ${agg.treeSize} does not lead to the entry's root`,
        { expected: published.root, computed: treeRoot }
      );
    }
    ctx.state.root = treeRoot;
    return {
      detail: [`leaf ${agg.leafIndex} of ${agg.treeSize}, audit path length ${agg.auditPath.length}: root `, H(treeRoot)],
    };
  }

  function checkEntry(ctx) {
    const b = ctx.bundle;
    let entry;
    try {
      entry = parseEntry(b.entry);
    } catch (exc) {
      throw V1.asProofError(exc, 4, "entry bytes do not parse: ");
    }
    const single = b.aggregation === null;
    const wanted = single
      ? commitmentEntry(entry.chainId, ctx.state.commitment)
      : batchEntry(entry.chainId, ctx.state.root, b.aggregation.treeSize);
    if (!equal(wanted, b.entry)) {
      const kind = single ? "the commitment entry of this document" : "the batch entry of this root and tree size";
      throw new ProofError(4, `the entry is not ${kind}`, { expected: entryHash(wanted), computed: entryHash(b.entry) });
    }
    V1.checkReceiptEntryHash(b);
    const what = single ? "publishes the commitment" : "publishes the batch root";
    return { detail: ["entry ", H(entryHash(b.entry)), " (chain ", H(entry.chainId), `) ${what}`] };
  }

  const step = V1.step;

  registerVersion(2, {
    keys: Object.freeze([...V1.V1_KEYS, "commitment", "aggregation"]),
    parse: parseV2,
    steps: [
      step(1, "file hash", V1.checkFileHash),
      step(2, "commitment", checkCommitment),
      step(3, "aggregation", checkAggregation),
      step(4, "entry", checkEntry),
      ...V1.LEDGER_AND_ANCHOR_STEPS,
    ],
    describe: V1.describe,
    facts: (bundle, state, policy) => ({
      ...V1.facts(bundle, state, policy),
      commitment: hex(state.commitment),
      aggregation:
        bundle.aggregation === null
          ? null
          : { leafIndex: Number(bundle.aggregation.leafIndex), treeSize: Number(bundle.aggregation.treeSize) },
    }),
  });
})(globalThis);
