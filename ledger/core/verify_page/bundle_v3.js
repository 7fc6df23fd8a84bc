/*
 * Bundle format version 3 (docs/proof-bundle.md, "Version 3"): a version-1 or version-2
 * bundle (`commitment` null or not) plus `timestamps`, the RFC 3161 tokens and the
 * OpenTimestamps stamps (`opentimestamps`, absent in bundles written before it) over the
 * directory block's KeyMR. Steps 1-11 are those of the version it extends. This page does
 * NOT check the tokens (no CMS or X.509 code here) nor the stamps: it lists them as present
 * and "not checked by this page"; `notary verify --tsa-ca` and `openssl ts -verify` check them.
 * Registers itself with NotaryVerify.registerVersion.
 */
(function (root) {
  "use strict";

  const { VERSIONS, fields, registerVersion } = root.NotaryVerify;
  const { fail, hexField, object } = fields;
  const { hex } = root.NotaryCodecs;

  /** The version a version-3 bundle extends: 2 with a commitment, 1 without. */
  const baseOf = (top) => VERSIONS.get(top.get("commitment") === null ? 1 : 2);

  function parseTimestamps(top) {
    const given = object(top.get("timestamps"), "timestamps");
    const keys = ["root", "rfc3161", ...(given.has("opentimestamps") ? ["opentimestamps"] : [])];
    const section = object(given, "timestamps", keys);
    const stampedRoot = hexField(section, "root");
    const tokens = section.get("rfc3161");
    if (!Array.isArray(tokens)) throw fail("timestamps.rfc3161 must be a list");
    tokens.forEach((item, i) => {
      const token = object(item, `timestamps.rfc3161[${i}]`, ["token", "certificates"]);
      if (typeof token.get("token") !== "string") throw fail(`rfc3161[${i}] token must be base64 text`);
    });
    const stamps = section.has("opentimestamps") ? section.get("opentimestamps") : [];
    if (!Array.isArray(stamps)) throw fail("timestamps.opentimestamps must be a list");
    stamps.forEach((item, i) => {
      const stamp = object(item, `timestamps.opentimestamps[${i}]`, ["ots", "headers"]);
      if (typeof stamp.get("ots") !== "string") throw fail(`opentimestamps[${i}] ots must be base64 text`);
      if (!Array.isArray(stamp.get("headers"))) throw fail(`opentimestamps[${i}] headers must be a list`);
    });
    return { root: stampedRoot, rfc3161: tokens.length, opentimestamps: stamps.length };
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
        opentimestamps: bundle.timestamps.opentimestamps,
        checked: false,
        note: "not checked by this page",
      },
    }),
  });
})(globalThis);
