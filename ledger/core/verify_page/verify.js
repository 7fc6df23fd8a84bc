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
 * `registerVersion`: its exact top-level keys, a parser (JSON object -> bundle; ProofError at step 0 for a malformed
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

  const { fromHexDigits, hex } = root.NotaryCodecs;
  const { CanonicalError, JSONDecodeError, loadsJson, repr } = root.NotaryPyJson;

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

  // -- trust policies (ledger/core/proof/policy.py) -------------------------------------------

  const POW_FUNCTIONS = ["sha256d", "scrypt"];
  const POLICY_KEYS = [
    "name", "chain", "genesis", "pow", "max_target", "confirmations",
    "require_window", "independent", "median_time_span", "note", "checkpoints",
  ];
  const HASH64 = /^[0-9a-f]{64}$/;

  /**
   * A policy from its JSON form (`TrustPolicy.to_json`): {name, chain, genesis (internal
   * order bytes or null), genesisHex, pow, maxTarget (BigInt), confirmations,
   * requireWindow, independent, medianTimeSpan, note}. Throws RangeError as
   * `TrustPolicy.from_json` raises PolicyError.
   */
  function makePolicy(obj) {
    if (obj === null || typeof obj !== "object") throw new RangeError("a policy must be a JSON object");
    const unknown = Object.keys(obj).filter((k) => !POLICY_KEYS.includes(k)).sort();
    if (unknown.length) throw new RangeError(`unknown policy keys: ${unknown.join(", ")}`);
    const { name, chain, genesis, pow, confirmations } = obj;
    if (genesis === undefined) throw new RangeError("genesis must be given (null for a chain with no fixed genesis)");
    if (typeof name !== "string" || typeof chain !== "string" || !name || !chain) {
      throw new RangeError("a policy needs a name and a chain");
    }
    if (genesis !== null && !(typeof genesis === "string" && HASH64.test(genesis))) {
      throw new RangeError("genesis must be 64 lowercase hex characters");
    }
    if (!POW_FUNCTIONS.includes(pow)) throw new RangeError(`pow must be one of ${POW_FUNCTIONS.join(", ")}`);
    if (!(typeof obj.max_target === "string" && HASH64.test(obj.max_target))) {
      throw new RangeError("max_target must be 64 lowercase hex characters");
    }
    const maxTarget = BigInt("0x" + obj.max_target);
    if (maxTarget === 0n) throw new RangeError("max_target must be in 1..2**256-1");
    if (!Number.isInteger(confirmations) || confirmations < 1) {
      throw new RangeError("confirmations must be at least 1");
    }
    const span = obj.median_time_span === undefined ? null : obj.median_time_span;
    if (span !== null && (!Number.isInteger(span) || span < 1)) {
      throw new RangeError("median_time_span must be at least 1");
    }
    const checkpoints = obj.checkpoints === undefined ? null : obj.checkpoints;
    if (checkpoints !== null && (typeof checkpoints !== "string" || !checkpoints)) {
      throw new RangeError("checkpoints must name a shipped set, or be null");
    }
    return Object.freeze({
      name,
      chain,
      checkpoints,
      genesis: genesis === null ? null : fromHexDigits(genesis).reverse(),
      genesisHex: genesis,
      pow,
      maxTarget,
      confirmations,
      requireWindow: obj.require_window === true,
      independent: obj.independent !== false,
      medianTimeSpan: span,
      note: typeof obj.note === "string" ? obj.note : "",
    });
  }

  /** `TrustPolicy.names_chain`: the policy's chain name, or its genesis hash (display hex). */
  const namesChain = (policy, label) =>
    label === policy.chain || (policy.genesisHex !== null && label === policy.genesisHex);

  /** `policy_for_chain`: the first of `policies` (JSON forms) whose chain `label` names
   * (that JSON form), or null. */
  function policyForChain(policies, label) {
    return policies.find((obj) => namesChain(makePolicy(obj), label)) || null;
  }

  // -- step 0: reading the bundle's fields (`ProofBundle.from_json`'s helpers) -----------------

  const BUNDLE_FORMAT = "notary-proof-bundle";
  const HEX_DIGITS = /^[0-9a-fA-F]*$/;

  const fail = (what) => new ProofError(0, what);

  /** A JSON object (Map); with `keys`, exactly those keys (`_keys`: unknown, then missing). */
  function object(value, what, keys = null) {
    if (!(value instanceof Map)) throw fail(`${what} must be a JSON object`);
    if (keys !== null) {
      const unknown = [...value.keys()].filter((k) => !keys.includes(k)).sort();
      if (unknown.length) throw fail(`${what} has unknown keys: ${unknown.join(", ")}`);
      const missing = keys.filter((k) => !value.has(k)).sort();
      if (missing.length) throw fail(`${what} lacks keys: ${missing.join(", ")}`);
    }
    return value;
  }

  /** Canonical hex (`from_hex(..., lowercase=True)`): lower case, no `0x`. */
  function decodeHex(text, what) {
    if (typeof text !== "string") throw fail(`${what} must be a hex string`);
    if (text.length % 2 || !HEX_DIGITS.test(text)) throw fail(`${what} is not valid hex`);
    if (text !== text.toLowerCase()) throw fail(`${what} must be lowercase hex`);
    return fromHexDigits(text);
  }

  /** The contract address: `0x` and lower-case hex (`_address`). */
  function addressField(obj, key) {
    const value = obj.get(key);
    if (typeof value !== "string" || !value.startsWith("0x")) throw fail(`${key} must be 0x and lowercase hex`);
    return decodeHex(value.slice(2), key);
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
      const node = object(item, `${what}[${i}]`, ["left", "right", "top"]);
      return [hexField(node, "left"), hexField(node, "right"), hexField(node, "top")];
    });
  }

  // -- versions and the run ------------------------------------------------------------

  const VERSIONS = new Map();

  /**
   * Register a bundle version.
   *
   * @param number the `version` integer.
   * @param spec.keys the top-level keys of the version, exactly.
   * @param spec.parse JSON object (a Map) -> bundle, throwing ProofError(0, ...).
   * @param spec.steps [{step, title, check}] in order; `check(ctx)` gets {bundle,
   *     documentSha256, policy, state} and returns {detail: [text | {hex}], skipped?}.
   * @param spec.describe bundle -> {documentSha256, height, chain} (shown before a run).
   * @param spec.facts (bundle, state, policy) -> what a passing run established (the verdict).
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
        top = loadsJson(input, { canonical: true });
      } catch (exc) {
        if (exc instanceof CanonicalError) throw fail(exc.message);
        if (!(exc instanceof JSONDecodeError || exc instanceof RangeError)) throw exc;
        throw new ProofError(0, `not valid JSON: ${exc.message}`);
      }
    }
    top = object(top, "bundle");
    if (top.get("format") !== BUNDLE_FORMAT) throw fail(`not a ${BUNDLE_FORMAT} document`);
    const version = top.get("version");
    for (const [number, spec] of VERSIONS) {
      if (typeof version === "bigint" && version === BigInt(number)) {
        object(top, "bundle", spec.keys);
        return [number, spec, spec.parse(top)];
      }
    }
    throw fail(`unsupported bundle version ${repr(version)}`);
  }

  /**
   * Check a bundle: `verify_bundle`'s steps in order, each reported to `onStep`.
   *
   * @param input bundle JSON text (string or UTF-8 bytes) or a value read by loadsJson.
   * @param options.documentSha256 the file's SHA-256 (Uint8Array, 32 bytes) or null (step 1
   *     is then skipped, as the Python verifier does without a file).
   * @param options.policy the trust policy (its JSON form, `TrustPolicy.to_json`): required,
   *     nothing is trusted by default.
   * @param options.onStep called with {step, title, detail, skipped} for each step held.
   * @returns {version, bundle, state} once every step holds.
   * @throws ProofError for the first step that fails; TypeError without a policy.
   */
  function verifyBundle(input, { documentSha256 = null, policy, onStep = () => {} } = {}) {
    if (!policy) throw new TypeError("verifyBundle needs a trust policy");
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
   * title, detail, parts, skipped}], failure, policy (its name), facts (what a passing
   * bundle shows, with `verdict`: `Verdict.lines()`)}.
   */
  function run(input, options = {}) {
    const steps = [];
    const policy = options.policy;
    const out = { ok: false, version: null, steps, failure: null, policy: policy.name, facts: null };
    try {
      const { version, bundle, state } = verifyBundle(input, {
        ...options,
        policy,
        onStep: (r) => steps.push({ ...r, parts: r.detail, detail: detailText(r.detail) }),
      });
      out.ok = true;
      out.version = version;
      out.facts = VERSIONS.get(version).facts(bundle, state, makePolicy(policy));
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
    STEP_TITLES,
    VERSIONS,
    ProofError,
    detailText,
    fields: Object.freeze({
      addressField,
      decodeHex,
      fail,
      hexField,
      hexList,
      nodeList,
      object,
      textField,
      uintField,
    }),
    makePolicy,
    namesChain,
    policyForChain,
    registerVersion,
    run,
    stepsOf,
    summary,
    verifyBundle,
  });
})(globalThis);
