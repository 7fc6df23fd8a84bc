/*
 * Bundle format version 3 (docs/proof-bundle.md, "Version 3"): a version-1 or version-2
 * bundle (`commitment` null or not) plus `timestamps`, the RFC 3161 tokens over the
 * directory block's KeyMR. Steps 1-11 are those of the version it extends. The tokens are
 * checked after those steps, by `checkTimestamps` (Web Crypto is asynchronous), against
 * the trust store the person chose, as `ledger.core.timestamps.bundle_part.check_timestamps`
 * checks them: without a store each is "not checked", never verified.
 * Registers itself with NotaryVerify.registerVersion; exports globalThis.NotaryBundleV3.
 */
(function (root) {
  "use strict";

  const { VERSIONS, fields, registerVersion } = root.NotaryVerify;
  const { decodeHex, fail, hexField, object } = fields;
  const { hex } = root.NotaryCodecs;
  const { base64Bytes } = root.NotaryX509;
  const { TimestampError, verifyToken } = root.NotaryTsp;
  const { checkOts } = root.NotaryOts;

  /** The version a version-3 bundle extends: 2 with a commitment, 1 without. */
  const baseOf = (top) => VERSIONS.get(top.get("commitment") === null ? 1 : 2);

  const SECTION_KEYS = ["root", "rfc3161", "opentimestamps"];

  function parseTimestamps(top) {
    const section = object(top.get("timestamps"), "timestamps");
    const unknown = [...section.keys()].filter((k) => !SECTION_KEYS.includes(k)).sort();
    if (unknown.length) throw fail(`timestamps has unknown keys: ${unknown.join(", ")}`);
    const missing = ["root", "rfc3161"].filter((k) => !section.has(k));
    if (missing.length) throw fail(`timestamps lacks keys: ${missing.join(", ")}`);
    const stampedRoot = hexField(section, "root");
    const tokens = section.get("rfc3161");
    if (!Array.isArray(tokens)) throw fail("timestamps.rfc3161 must be a list");
    const decoded = tokens.map((item, i) => {
      const token = object(item, `timestamps.rfc3161[${i}]`, ["token", "certificates"]);
      if (!Array.isArray(token.get("certificates"))) throw fail(`timestamps.rfc3161[${i}] must hold token and certificates`);
      token.get("certificates").forEach((c) => fromBase64(c, `rfc3161[${i}] certificate`));
      return fromBase64(token.get("token"), `rfc3161[${i}]`);
    });
    const ots = section.has("opentimestamps") ? section.get("opentimestamps") : [];
    if (!Array.isArray(ots)) throw fail("timestamps.opentimestamps must be a list");
    return { root: stampedRoot, rfc3161: tokens.length, tokens: decoded, ots: ots.map(parseOtsStamp) };
  }

  /** One `opentimestamps` element (`OtsStamp.from_json`): {ots: bytes, headers: [80 bytes]}. */
  function parseOtsStamp(item) {
    if (!(item instanceof Map) || item.size !== 2 || !item.has("ots") || !item.has("headers")) {
      throw fail("an opentimestamps element must hold exactly ots and headers");
    }
    const headers = item.get("headers");
    if (typeof item.get("ots") !== "string" || !Array.isArray(headers)) {
      throw fail("opentimestamps ots must be base64 text, headers a list");
    }
    let ots;
    try {
      ots = base64Bytes(item.get("ots"));
    } catch (exc) {
      throw fail("opentimestamps ots is not base64");
    }
    return {
      ots,
      headers: headers.map((h) => {
        const raw = decodeHex(h, "opentimestamps header");
        if (raw.length !== 80) throw fail("opentimestamps header must be 80 bytes");
        return raw;
      }),
    };
  }

  /**
   * The OpenTimestamps stamps of a bundle that passed its steps, each checked over `keyMr`
   * under `policy` (makePolicy form: the Bitcoin mainnet policy the page offers, or null)
   * with the checkpoint sets `sets` by NotaryOts.checkOts, as `ledger.core.timestamps.ots.check_ots` checks them.
   */
  function checkOpenTimestamps(timestamps, keyMr, policy, sets = {}) {
    return timestamps.ots.map((stamp, index) =>
      hex(timestamps.root) !== hex(keyMr)
        ? { index, state: "invalid", policy: policy && policy.name, attestations: [], pending: [], reasons: ["the section stamps another root"] }
        : { index, ...checkOts(stamp, keyMr, policy, sets) }
    );
  }

  function fromBase64(value, what) {
    if (typeof value !== "string") throw fail(`${what} must be base64 text`);
    try {
      return base64Bytes(value);
    } catch (exc) {
      throw fail(`${what} is not base64`);
    }
  }

  /**
   * The RFC 3161 tokens of a bundle that passed its steps, each checked over `keyMr` (the
   * directory block KeyMR the receipt leads to) against `trust` (NotaryX509.readTrustStore)
   * or, with `trust` null, reported "not checked". Mirrors `check_timestamps`.
   *
   * @returns Promise of [{index, status: "verified" | "failed" | "not checked", verdict,
   *     check (the failed check's number), reason}], one per token.
   */
  async function checkTimestamps(timestamps, keyMr, trust) {
    const out = [];
    for (const [index, token] of timestamps.tokens.entries()) {
      if (trust === null) {
        out.push({ index, status: "not checked", verdict: null, check: null, reason: "no trust store chosen" });
      } else if (hex(timestamps.root) !== hex(keyMr)) {
        out.push({ index, status: "failed", verdict: null, check: null, reason: "stamps another root" });
      } else {
        try {
          const verdict = await verifyToken(token, { digest: keyMr, hashName: "sha256", trust });
          out.push({ index, status: "verified", verdict, check: null, reason: null });
        } catch (exc) {
          if (!(exc instanceof TimestampError)) throw exc;
          out.push({ index, status: "failed", verdict: null, check: exc.check, reason: exc.message });
        }
      }
    }
    return out;
  }

  function parseV3(top) {
    const base = baseOf(top);
    if (top.get("commitment") === null && top.get("aggregation") !== null) {
      throw fail("aggregation must be null without a commitment");
    }
    return { ...base.parse(top), base, timestamps: parseTimestamps(top) };
  }

  /** Version 2's numbered steps, each run as the extended version runs it. */
  const steps = VERSIONS.get(2).steps.map(({ step, title }) => ({
    step,
    title,
    check: (ctx) => ctx.bundle.base.steps.find((s) => s.step === step).check(ctx),
  }));

  registerVersion(3, {
    keys: Object.freeze([...root.NotaryBundleV1.V1_KEYS, "commitment", "aggregation", "timestamps"]),
    parse: parseV3,
    steps,
    describe: (bundle) => bundle.base.describe(bundle),
    facts: (bundle, state, policy) => ({
      ...bundle.base.facts(bundle, state, policy),
      timestamps: {
        root: hex(bundle.timestamps.root),
        rfc3161: bundle.timestamps.rfc3161,
        keyMr: bundle.receipt.directoryBlockKeyMr,
        part: bundle.timestamps,
      },
    }),
  });

  root.NotaryBundleV3 = Object.freeze({ checkOpenTimestamps, checkTimestamps });
})(globalThis);
