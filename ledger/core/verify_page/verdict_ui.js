/*
 * The verification page's verdict: the box above the steps (#verdict, its mark, its
 * sentence and its detail), from a NotaryVerify.run result. data-verdict is pass,
 * partial (no file checked) or fail: a failed step, or, as `notary verify` exits 1, a
 * timestamp token that fails under the chosen trust store or an invalid OpenTimestamps
 * proof even when every step holds (ui.js sets error when a file cannot be read).
 *
 * Exports globalThis.NotaryVerdictUi: renderVerdict(result), setVerdict(mark, text, detail).
 */
(function (root) {
  "use strict";

  const doc = root.document;
  const $ = (id) => doc.getElementById(id);

  function renderVerdict(result) {
    const verdict = $("verdict");
    const fileSkipped = result.steps.some((s) => s.step === 1 && s.skipped);
    const stampFailures = failedTimestamps(result);
    const kind = !result.ok || stampFailures ? "fail" : fileSkipped ? "partial" : "pass";
    verdict.dataset.verdict = kind;
    delete verdict.dataset.failedStep;
    $("mismatch").hidden = true;
    if (kind === "fail" && result.ok) {
      // As `notary verify` (exit 1): a timestamp that fails is a failed verification,
      // even when every step of the bundle holds.
      setVerdict(
        "✗",
        `Every step holds under policy ${result.policy}, but ${stampFailures} independent timestamp` +
          `${stampFailures === 1 ? "" : "s"} failed.`,
        (fileSkipped ? "" : passSentence(result.facts)) + timestampsNote(result)
      );
    } else if (kind === "fail") {
      const f = result.failure;
      verdict.dataset.failedStep = String(f.step);
      setVerdict("✗", `Verification failed at step ${f.step} (${f.title}).`, f.reason);
      if (f.expected !== null || f.computed !== null) {
        $("mismatch-expected").textContent = f.expected === null ? "(not stated)" : f.expected;
        $("mismatch-computed").textContent = f.computed === null ? "(not computed)" : f.computed;
        $("mismatch").hidden = false;
      }
    } else if (kind === "partial") {
      setVerdict(
        "!",
        "The bundle holds, but no file was checked.",
        "Every step of the bundle holds. Step 1 needs the document itself: add it above to check" +
          " that it is the one this proof is about."
      );
    } else if (result.facts.independent) {
      setVerdict("✓", `Verified under policy ${result.policy}: every step holds.`, passSentence(result.facts) + timestampsNote(result));
    } else {
      setVerdict(
        "✓",
        `Verified under policy ${result.policy}: every step holds, but this chain is not independent evidence.`,
        passSentence(result.facts) + timestampsNote(result)
      );
    }
  }

  /** RFC 3161 tokens that failed under the chosen trust store, plus invalid OTS proofs. */
  function failedTimestamps(result) {
    if (!result.ok || !result.timestamps) return 0;
    const tokens = (result.timestamps.checks || []).filter((c) => c.status === "failed").length;
    const ots = (result.timestamps.ots || []).filter((o) => o.state === "invalid").length;
    return tokens + ots;
  }

  function setVerdict(mark, text, detail) {
    $("verdict-mark").textContent = mark;
    $("verdict-text").textContent = text;
    $("verdict-detail").textContent = detail;
  }

  function passSentence(f) {
    const recorded =
      f.commitment === null
        ? "its SHA-256 is recorded"
        : f.aggregation === null
          ? "its commitment (its SHA-256 sealed with the bundle's nonce) is recorded in its own entry"
          : "its commitment (its SHA-256 sealed with the bundle's nonce) is recorded as leaf" +
            ` ${f.aggregation.leafIndex} of a batch of ${f.aggregation.treeSize}`;
    return (
      `This file is the document of the proof: ${recorded} in directory block ${f.height},` +
      ` which is anchored in the proof-of-work chain “${f.chain}” under` +
      ` ${f.confirmations} confirmations${f.window ? " and in a window anchor" : ""}. ` +
      f.verdict.join(" ")
    );
  }

  /** Version 3: how many RFC 3161 tokens the bundle carries and how they came out. */
  function timestampsNote(result) {
    const t = result.facts && result.facts.timestamps;
    if (!t || t.rfc3161 === 0 || !result.timestamps) return otsNote(result);
    const n = t.rfc3161 === 1 ? "1 RFC 3161 timestamp token" : `${t.rfc3161} RFC 3161 timestamp tokens`;
    const checks = result.timestamps.checks;
    const count = (status) => checks.filter((c) => c.status === status).length;
    if (result.timestamps.trust === null) {
      return ` The bundle also carries ${n} over the block's KeyMR: present, not checked (no trust store chosen).` + otsNote(result);
    }
    const failed = count("failed");
    return (
      ` The bundle also carries ${n} over the block's KeyMR: ${count("verified")} verified,` +
      ` ${failed} failed under the trust store ${result.timestamps.trust.name}` +
      (failed ? " (a timestamp token failed: see below)." : ".") +
      otsNote(result)
    );
  }

  /** Version 3: the OpenTimestamps stamps, counted by state. */
  function otsNote(result) {
    const ots = result.timestamps ? result.timestamps.ots : [];
    if (!ots.length) return "";
    const states = ["verified", "unverifiable", "pending", "invalid"];
    const counts = states.map((s) => [s, ots.filter((o) => o.state === s).length]).filter(([, n]) => n);
    return ` OpenTimestamps: ${counts.map(([s, n]) => `${n} ${s}`).join(", ")} (see below).`;
  }

  root.NotaryVerdictUi = { renderVerdict, setVerdict };
})(globalThis);
