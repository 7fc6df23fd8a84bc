/*
 * The verification page's independent timestamps: the trust store a person chooses for
 * timestamp authorities, the tokens of a version-3 bundle checked against it
 * (NotaryBundleV3.checkTimestamps) and shown one line each.
 *
 * Each line is an <li class="stamp STATUS" data-kind="rfc3161" data-index data-status>,
 * status one of: verified, not-checked ("present, not checked: no trust store chosen"),
 * not-trusted (check 9: no path to the store at the token's time) and invalid (any other
 * check, or a section over another root). OpenTimestamps stamps follow, data-kind
 * "opentimestamps", status verified, unverifiable, pending or invalid (NotaryOts), placed
 * under the policy applied when it is Bitcoin mainnet's, else the shipped bitcoin-mainnet. #timestamps[data-outcome] sums them up.
 *
 * Exports globalThis.NotaryStampsUi; needs NotaryVerify, NotaryX509, NotaryOts and
 * NotaryBundleV3.
 */
(function (root) {
  "use strict";

  const X = root.NotaryX509;
  const V3 = root.NotaryBundleV3;
  const V = root.NotaryVerify;
  const { BITCOIN_GENESIS } = root.NotaryOts;
  const doc = root.document;
  const $ = (id) => doc.getElementById(id);

  let trust = null; // the chosen store: {name, fingerprint, anchors}

  /** Read a chosen file as the trust store; shows its name and fingerprint, or why not. */
  async function chooseTrustFile(file) {
    const error = $("tsa-trust-error");
    try {
      trust = await X.readTrustStore(new Uint8Array(await file.arrayBuffer()), file.name);
    } catch (exc) {
      trust = null;
      error.textContent = `${file.name} is not a trust store: ${exc.message}.`;
      error.hidden = false;
      $("tsa-trust").open = true;
      $("tsa-trust-summary").textContent = "no trust store chosen";
      return;
    }
    error.hidden = true;
    const n = trust.anchors.length;
    $("tsa-trust-summary").textContent =
      `${trust.name} (${n} certificate${n === 1 ? "" : "s"}, SHA-256 ${trust.fingerprint.slice(0, 16)}…)`;
  }

  /** The policy OpenTimestamps headers are placed under (`ots_policy_for`): `applied`
   * (a JSON form) when it is Bitcoin mainnet's (its genesis), else the offered
   * `bitcoin-mainnet` (shipped), or null when the page offers none. */
  function bitcoinPolicy(applied, policies) {
    const made = V.makePolicy(applied);
    if (made.genesisHex === BITCOIN_GENESIS) return made;
    const shipped = policies.find((p) => p.name === "bitcoin-mainnet");
    return shipped ? V.makePolicy(shipped) : null;
  }

  /** The stamps of a passing result checked: {trust ({name, fingerprint} or null), checks
   * (RFC 3161), ots (OpenTimestamps)}; null for a bundle without any. */
  async function check(result, applied, policies, sets = {}) {
    const t = result.ok && result.facts && result.facts.timestamps;
    if (!t || (!t.rfc3161 && !t.part.ots.length)) return null;
    const checks = await V3.checkTimestamps(t.part, t.keyMr, trust);
    const ots = V3.checkOpenTimestamps(t.part, t.keyMr, bitcoinPolicy(applied, policies), sets);
    return { trust: trust && { name: trust.name, fingerprint: trust.fingerprint }, checks, ots };
  }

  const MARKS = { verified: "✓", "not-checked": "–", "not-trusted": "✗", invalid: "✗", pending: "–", unverifiable: "–" };

  /** One token's outcome as {status, word, text} (what the line says). */
  function describe(c) {
    const v = c.verdict;
    if (c.status === "verified") {
      return {
        status: "verified",
        word: "verified",
        text:
          `${v.tsa} at ${v.genTime} (serial ${v.serial}), trusted by ${v.trust}` +
          ` (SHA-256 ${v.fingerprint}); revocation ${v.revocation}`,
      };
    }
    if (c.status === "not checked") return { status: "not-checked", word: "present, not checked", text: c.reason };
    if (c.check === 9) return { status: "not-trusted", word: "not trusted", text: c.reason.replace(/^check 9 \(chain\): /, "") };
    return { status: "invalid", word: "invalid", text: c.reason };
  }

  /** One OpenTimestamps stamp's outcome as {status, word, text}. */
  function describeOts(o) {
    const policy = o.policy === null ? "no Bitcoin mainnet policy" : `policy ${o.policy}`;
    if (o.state === "verified") {
      const placed = o.attestations.filter((a) => a.state === "verified");
      const text = placed
        .map((a) => `Bitcoin block ${a.height} (${a.blockHash}) at ${new Date(a.time * 1000).toISOString().replace(".000Z", "Z")}, placed by ${a.basis} under ${policy}: ${a.reason}`)
        .join("; ");
      return { status: "verified", word: "verified", text };
    }
    if (o.state === "pending") {
      return { status: "pending", word: "pending", text: `calendars' promises only (${o.pending.join(", ")}); never verified` };
    }
    return { status: o.state, word: o.state, text: o.reasons.join("; ") || "no attestation" };
  }

  function outcomeOf(lines) {
    const kinds = new Set(lines.map((l) => l.status));
    if (kinds.size === 1) return [...kinds][0];
    return kinds.has("invalid") || kinds.has("not-trusted") ? "failed" : "mixed";
  }

  /** Show `stamps` (from `check`, or null: the panel is hidden). */
  function render(stamps, el) {
    const panel = $("timestamps");
    if (!stamps) {
      panel.hidden = true;
      return;
    }
    const item = (kind, label) => (line, i) =>
      el(
        "li",
        { class: `stamp ${line.status}`, "data-kind": kind, "data-index": String(i), "data-status": line.status },
        el("span", { class: "mark", "aria-hidden": "true" }, MARKS[line.status]),
        el("span", { class: "text" }, `${label} ${i + 1}: `, el("span", { class: "word" }, line.word), `: ${line.text}`)
      );
    const tokens = stamps.checks.map(describe);
    const ots = stamps.ots.map(describeOts);
    const lines = [...tokens, ...ots];
    $("timestamp-list").replaceChildren(
      ...tokens.map(item("rfc3161", "token")),
      ...ots.map(item("opentimestamps", "OpenTimestamps proof"))
    );
    panel.dataset.outcome = outcomeOf(lines);
    const bounds = [
      ...stamps.checks
        .filter((c) => c.status === "verified")
        .map((c) => [c.verdict.genDate.getTime(), `RFC 3161, trust store ${stamps.trust.name}`]),
      ...stamps.ots.flatMap((o) =>
        o.attestations
          .filter((a) => a.state === "verified")
          .map((a) => [a.time * 1000, `OpenTimestamps, Bitcoin block ${a.height} under policy ${o.policy}`])
      ),
    ].sort((x, y) => x[0] - y[0]);
    const earliest = bounds.length ? new Date(bounds[0][0]).toISOString().replace(".000Z", "Z") : null;
    $("timestamps-note").textContent = earliest
      ? `The document existed no later than ${earliest} (${bounds[0][1]}).`
      : !stamps.checks.length
        ? ""
        : stamps.trust
          ? `Checked against the trust store ${stamps.trust.name} (SHA-256 ${stamps.trust.fingerprint}).`
          : "Choose a trust store for timestamp authorities above to check the RFC 3161 tokens.";
    panel.hidden = false;
  }

  /** Whether some token failed under the chosen store (the verdict says so). */
  const anyFailed = (stamps) =>
    Boolean(stamps && (stamps.checks.some((c) => c.status === "failed") || stamps.ots.some((o) => o.state === "invalid")));

  root.NotaryStampsUi = Object.freeze({ anyFailed, check, chooseTrustFile, describe, render });
})(globalThis);
