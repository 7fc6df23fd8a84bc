/*
 * The proof-bundle verifier of the verification page (docs/proof-bundle.md): what every
 * bundle version shares. Step 0 (JSON, `format`, `version`), the trust policy, the run.
 *
 * It mirrors ledger/core/proof/ `verify_bundle` step by step, so that a bundle passes
 * here exactly when it passes `notary verify`, and a bad one fails at the same numbered
 * step with the same reason and the same expected / computed values. The browser tests
 * hold the two to that on the tamper suite (tests/browser/test_verify_page.py).
 *
 * Versions: each bundle version registers itself (bundle_v1.js, bundle_v2.js) with
 * `registerVersion`: a parser (JSON object -> bundle; ProofError at step 0 for a malformed
 * one), its numbered steps after step 0 (each a check returning its report or throwing
 * ProofError), and what a passing bundle shows. Every version has the same step numbers:
 * version 1 reports steps 2 (commitment) and 3 (aggregation) as skipped; version 2 has its
 * own parser, steps 2-4, and version 1's checks for the rest.
 *
 * Pure: no DOM, no I/O. Exports globalThis.NotaryVerify; needs NotaryCodecs (codecs.js)
 * and NotaryPyJson (pyjson.js).
 */
(function (root) {
  "use strict";

  const { difficultyTarget, fromHexDigits, hex } = root.NotaryCodecs;
  const { JSONDecodeError, equalsInt, loadsJson, repr } = root.NotaryPyJson;

  /** Step titles, as `ledger.core.proof.Step.title` names them; versions may add more. */
  const STEP_TITLES = {
    0: "bundle format",
    1: "file hash",
    2: "commitment",
    3: "aggregation",
    4: "entry",
    5: "Merkle steps",
    6: "directory block",
    7: "anchor payload",
    8: "anchor transaction",
    9: "proof of work",
    10: "header links",
    11: "window anchor",
  };

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

  // -- the trust policy ------------------------------------------------------------------------

  /** `PowParams()`: the bundled development chain (ledger/core/pow/params.py). */
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

  // -- step 0: reading the bundle's fields (`ProofBundle.from_json`'s helpers) -----------------

  const BUNDLE_FORMAT = "notary-proof-bundle";
  const HEX_DIGITS = /^[0-9a-fA-F]*$/;

  const fail = (what) => new ProofError(0, what);

  function object(value, what) {
    if (!(value instanceof Map)) throw fail(`${what} must be a JSON object`);
    return value;
  }

  function decodeHex(text, what) {
    if (typeof text !== "string") throw fail(`${what} must be a hex string`);
    const digits = /^0[xX]/.test(text) ? text.slice(2) : text;
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
    if (!Array.isArray(value)) throw fail(`${what} must be a list of hex strings`);
    return value.map((item, i) => decodeHex(item, `${what}[${i}]`));
  }

  function nodeList(value, what) {
    if (!Array.isArray(value)) throw fail(`${what} must be a list`);
    return value.map((item, i) => {
      const node = object(item, `${what}[${i}]`);
      return [hexField(node, "left"), hexField(node, "right"), hexField(node, "top")];
    });
  }

  // -- versions and the run ------------------------------------------------------------

  const VERSIONS = new Map();

  /**
   * Register a bundle version.
   *
   * @param number the `version` integer.
   * @param spec.parse JSON object (a Map) -> bundle, throwing ProofError(0, ...).
   * @param spec.steps [{step, title, check}] in order; `check(ctx)` gets {bundle,
   *     documentSha256, policy, state} and returns {detail: [text | {hex}], skipped?}.
   * @param spec.describe bundle -> {documentSha256, height, chain} (shown before a run).
   * @param spec.facts (bundle, state) -> what a passing run established (the verdict).
   */
  function registerVersion(number, spec) {
    for (const { step, title } of spec.steps) STEP_TITLES[step] = STEP_TITLES[step] || title;
    VERSIONS.set(number, Object.freeze(spec));
  }

  /** Step 0: JSON text (string or bytes) or an already-read value -> [version, spec, bundle]. */
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
   * @returns {version, bundle, state} once every step holds.
   * @throws ProofError for the first step that fails.
   */
  function verifyBundle(input, { documentSha256 = null, policy = DEFAULT_POLICY, onStep = () => {} } = {}) {
    const trusted = makePolicy(policy);
    const [version, spec, bundle] = readBundle(input);
    onStep({ step: 0, title: STEP_TITLES[0], detail: [`${BUNDLE_FORMAT} version ${version}`], skipped: false });
    const ctx = { bundle, documentSha256, policy: trusted, state: {} };
    for (const { step, title, check } of spec.steps) {
      const report = check(ctx);
      onStep({ step, title, detail: report.detail, skipped: Boolean(report.skipped) });
    }
    return { version, bundle, state: ctx.state };
  }

  const detailText = (detail) => detail.map((part) => (typeof part === "string" ? part : part.hex)).join("");

  /** The numbered steps of a bundle version (the newest for an unknown one), step 0 first. */
  function stepsOf(version) {
    const spec = VERSIONS.get(version) || VERSIONS.get(Math.max(...VERSIONS.keys()));
    return [{ step: 0, title: STEP_TITLES[0] }, ...spec.steps.map(({ step, title }) => ({ step, title }))];
  }

  /**
   * `verifyBundle` as plain data, for the page and the tests: {ok, version, steps: [{step,
   * title, detail, parts, skipped}], failure, policy, facts (what a passing bundle shows)}.
   */
  function run(input, options = {}) {
    const steps = [];
    const policy = { ...DEFAULT_POLICY, ...(options.policy || {}) };
    const out = { ok: false, version: null, steps, failure: null, policy, facts: null };
    try {
      const { version, bundle, state } = verifyBundle(input, {
        ...options,
        policy,
        onStep: (r) => steps.push({ ...r, parts: r.detail, detail: detailText(r.detail) }),
      });
      out.ok = true;
      out.version = version;
      out.facts = VERSIONS.get(version).facts(bundle, state);
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

  /** What a bundle is about ({version, documentSha256, height, chain}), or null if step 0 fails. */
  function summary(input) {
    try {
      const [version, spec, bundle] = readBundle(input);
      return { version, ...spec.describe(bundle) };
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
    fields: Object.freeze({ decodeHex, fail, hexField, hexList, nodeList, object, textField, uintField }),
    makePolicy,
    registerVersion,
    run,
    stepsOf,
    summary,
    verifyBundle,
  });
})(globalThis);
