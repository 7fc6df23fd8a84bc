/*
 * The verification page's interface: files in (pickers, drag and drop), the file hashed
 * (Web Crypto at once, or streamed through the inlined @noble/hashes with a progress bar
 * for large files), NotaryVerify.run, and the steps shown with a verdict.
 *
 * State is shown to scripts as well as to people: #result[data-state] is idle, running,
 * done or error; #verdict[data-verdict] is pass, partial (no file checked), fail or error;
 * each step's <li> has data-step and data-status. globalThis.notaryPage exposes hashFile
 * and the last result (the browser tests and the benchmark use them).
 */
(function (root) {
  "use strict";

  const V = root.NotaryVerify;
  const Stamps = root.NotaryStampsUi;
  const Verdict = root.NotaryVerdictUi;
  const noble = root.nobleHashes;
  const doc = root.document;
  const $ = (id) => doc.getElementById(id);

  const MIB = 1 << 20;
  const config = readJson("notary-page-config") || {};
  /** Files up to this size are read whole and hashed by Web Crypto; larger ones streamed. */
  const IN_MEMORY_MAX_BYTES = config.inMemoryMaxBytes || 256 * MIB;
  const CHUNK_BYTES = config.chunkBytes || 8 * MIB;
  /** The policies offered (`TrustPolicy.to_json` forms) and the one chosen at first (a
   * name; null: the one the bundle's chain names, stated as assumed). */
  const POLICIES = [...(config.policies || [])];
  const FIRST_POLICY = config.policy || "";
  /** Checkpoint sets the policies may name ({name: {first, records}}: NotaryOts.readCheckpoints). */
  const CHECKPOINTS = Object.fromEntries(
    Object.entries(config.checkpoints || {}).map(([name, c]) => [name, root.NotaryOts.readCheckpoints(name, c.first, c.records)])
  );

  const state = {
    document: null, // File
    digest: null, // {file, digest, method, seconds}: the last file hashed
    bundle: null, // {name, bytes}
    embedded: null, // JSON text of the bundle built into the page
    runId: 0,
    last: null,
  };

  function readJson(id) {
    const el = $(id);
    const text = el ? el.textContent.trim() : "";
    return text && text !== "null" ? JSON.parse(text) : null;
  }

  // -- hashing ----------------------------------------------------------------------------

  /**
   * SHA-256 of a File or Blob: {digest, method, seconds}. `mode`: "auto" (Web Crypto for a
   * file that fits IN_MEMORY_MAX_BYTES and a browser that offers it, else streamed),
   * "webcrypto" or "stream". `onProgress(fraction | null)`: null while Web Crypto works.
   */
  async function hashFile(file, { mode = "auto", onProgress = () => {} } = {}) {
    const started = performance.now();
    const subtle = root.crypto && root.crypto.subtle;
    let method = mode;
    if (mode === "auto") method = subtle && file.size <= IN_MEMORY_MAX_BYTES ? "webcrypto" : "stream";
    if (method === "webcrypto") {
      try {
        onProgress(null);
        const digest = new Uint8Array(await subtle.digest("SHA-256", await file.arrayBuffer()));
        return { digest, method, seconds: (performance.now() - started) / 1000 };
      } catch (exc) {
        if (mode !== "auto" || exc.name === "NotFoundError") throw exc;
        method = "stream"; // not enough memory for the whole file: stream it instead
      }
    }
    const hasher = noble.sha256.create();
    onProgress(0);
    for (let at = 0; at < file.size; at += CHUNK_BYTES) {
      const chunk = await file.slice(at, at + CHUNK_BYTES).arrayBuffer();
      hasher.update(new Uint8Array(chunk));
      onProgress(Math.min(1, (at + CHUNK_BYTES) / file.size));
    }
    return { digest: hasher.digest(), method, seconds: (performance.now() - started) / 1000 };
  }

  // -- the run -------------------------------------------------------------------------------

  function bundleInput() {
    if (state.embedded !== null) return state.embedded;
    return state.bundle ? state.bundle.bytes : null;
  }

  async function verifyNow() {
    const input = bundleInput();
    const chosen = input === null ? null : readPolicy(input);
    if (input === null || chosen === null) return null;
    const { policy, assumed } = chosen;
    const id = ++state.runId;
    setRunning(true);
    let hashed = null;
    try {
      if (state.document && V.summary(input) !== null) hashed = await digestOf(state.document);
    } catch (exc) {
      if (id === state.runId) showReadError(exc);
      return null;
    } finally {
      if (id === state.runId) setRunning(false);
    }
    if (id !== state.runId) return null;
    const result = V.run(input, { documentSha256: hashed ? hashed.digest : null, policy });
    result.assumed = assumed;
    result.timestamps = await Stamps.check(result, policy, POLICIES, CHECKPOINTS);
    if (id !== state.runId) return null;
    state.last = { ...result, hashed: hashed && { method: hashed.method, seconds: hashed.seconds } };
    render(result, hashed);
    return state.last;
  }

  async function digestOf(file) {
    if (state.digest && state.digest.file === file) return state.digest;
    const hashed = await hashFile(file, { onProgress: showProgress(file) });
    state.digest = { file, ...hashed };
    return state.digest;
  }

  function setRunning(running) {
    $("progress").hidden = !running;
    $("verify-button").disabled = running || bundleInput() === null;
    if (running) {
      $("result").hidden = false;
      $("result").dataset.state = "running";
    }
  }

  function showProgress(file) {
    const bar = $("progress-bar");
    const text = $("progress-text");
    $("progress-label").textContent = `Hashing ${file.name} (${formatBytes(file.size)})`;
    let shown = -1;
    return (fraction) => {
      if (fraction === null) {
        bar.removeAttribute("value");
        text.textContent = "reading…";
        return;
      }
      const percent = Math.floor(fraction * 100);
      if (percent === shown) return;
      shown = percent;
      bar.value = fraction;
      text.textContent = `${percent} %`;
    };
  }

  // -- rendering -------------------------------------------------------------------------------

  function el(tag, attrs = {}, ...children) {
    const node = doc.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "class") node.className = value;
      else if (key.startsWith("data-")) node.dataset[key.slice(5).replace(/-(.)/g, (_, c) => c.toUpperCase())] = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) node.append(child);
    return node;
  }

  const fullValues = () => $("full-values").checked;

  function hexNode(value) {
    const short = fullValues() || value.length <= 20 ? value : `${value.slice(0, 8)}…${value.slice(-8)}`;
    return el("code", { class: "hex", title: value }, short);
  }

  function detailNodes(parts) {
    return parts.map((part) => (typeof part === "string" ? part : hexNode(part.hex)));
  }

  const MARKS = { passed: "✓", failed: "✗", skipped: "–", unreached: "·" };
  const WORDS = { passed: "passed", failed: "failed", skipped: "skipped", unreached: "not reached" };

  function render(result, hashed, { focus = true } = {}) {
    const reports = new Map(result.steps.map((s) => [s.step, s]));
    const list = $("steps");
    list.replaceChildren(
      ...V.stepsOf(result.version || 1).map(({ step, title }) => {
        const report = reports.get(step);
        const failed = result.failure && result.failure.step === step;
        const status = failed ? "failed" : report ? (report.skipped ? "skipped" : "passed") : "unreached";
        const detail = failed ? [result.failure.reason] : report ? detailNodes(report.parts) : ["not checked"];
        return el(
          "li",
          { class: `step ${status}`, "data-step": String(step), "data-status": status },
          el("span", { class: "mark", "aria-hidden": "true" }, MARKS[status]),
          el("span", { class: "num" }, String(step)),
          el("span", { class: "title" }, title),
          el("span", { class: "status" }, WORDS[status]),
          el("span", { class: "detail" }, ...detail)
        );
      })
    );
    Verdict.renderVerdict(result);
    Stamps.render(result.timestamps, el);
    $("run-note").replaceChildren(policyNote(result), hashed ? ` ${hashNote(hashed)}` : "");
    $("result").hidden = false;
    $("result").dataset.state = "done";
    if (focus) $("verdict-title").focus();
  }

  function policyNote(result) {
    const how = result.assumed ? "assumed from the bundle's chain (choose one above to change it)" : "chosen above";
    return `Policy applied: ${result.policy}, ${how}.`;
  }

  function hashNote(h) {
    const how = h.method === "webcrypto" ? "by Web Crypto" : "streamed through @noble/hashes";
    return `File hashed ${how} in ${h.seconds.toFixed(2)} s.`;
  }

  function showReadError(exc) {
    const verdict = $("verdict");
    verdict.dataset.verdict = "error";
    delete verdict.dataset.failedStep;
    $("mismatch").hidden = true;
    Verdict.setVerdict("!", "The file could not be read.", `${exc.name}: ${exc.message}`);
    $("steps").replaceChildren();
    $("run-note").textContent = "";
    $("result").hidden = false;
    $("result").dataset.state = "error";
    $("verdict-title").focus();
  }

  function formatBytes(n) {
    if (n < 1024) return `${n} bytes`;
    if (n < MIB) return `${(n / 1024).toFixed(1)} KiB`;
    if (n < 1024 * MIB) return `${(n / MIB).toFixed(1)} MiB`;
    return `${(n / 1024 / MIB).toFixed(2)} GiB`;
  }

  // -- the policy ------------------------------------------------------------------------------

  const AUTO = "";

  function fillPolicies(first = FIRST_POLICY) {
    const select = $("policy-select");
    const auto = el("option", { value: AUTO }, "the one the bundle's chain names (assumed)");
    select.replaceChildren(auto, ...POLICIES.map((p) => el("option", { value: p.name }, p.name)));
    select.value = POLICIES.some((p) => p.name === first) ? first : AUTO;
  }

  /** A policy file chosen on the page: checked as `TrustPolicy.from_json` checks it, added to
   * the list and chosen; a bad one is refused with its reason. */
  async function addPolicyFile(file) {
    const error = $("policy-error");
    let obj;
    try {
      obj = JSON.parse(await file.text());
      V.makePolicy(obj);
    } catch (exc) {
      error.textContent = `${file.name} is not a policy: ${exc.message}.`;
      error.hidden = false;
      return;
    }
    const at = POLICIES.findIndex((p) => p.name === obj.name);
    if (at >= 0) POLICIES[at] = obj;
    else POLICIES.push(obj);
    fillPolicies();
    $("policy-select").value = obj.name;
    readPolicy();
    if ($("result").dataset.state !== "idle") verifyNow();
  }

  /** The policy to apply to `input`: {policy (JSON form), assumed}; null (and a message) if none. */
  function readPolicy(input = bundleInput()) {
    const name = $("policy-select").value;
    let policy = POLICIES.find((p) => p.name === name) || null;
    const assumed = name === AUTO;
    const error = $("policy-error");
    if (assumed && input !== null) {
      const about = V.summary(input);
      policy = about === null ? POLICIES[0] || null : V.policyForChain(POLICIES, about.chain);
      if (policy === null) {
        error.textContent =
          `No policy here trusts the bundle's chain “${about.chain}”: choose one, or check it with` +
          " notary verify --policy FILE.";
        error.hidden = false;
        showPolicy(null, assumed);
        return null;
      }
    }
    error.hidden = true;
    showPolicy(policy, assumed);
    return policy === null ? null : { policy, assumed };
  }

  function showPolicy(p, assumed) {
    $("policy-summary").textContent =
      p === null ? "none yet" : `${p.name}${assumed ? " (assumed from the bundle's chain)" : ""}`;
    if (p === null) {
      $("policy-facts").replaceChildren();
      return;
    }
    const work = BigInt("0x" + p.max_target);
    const facts = [
      ["chain", `${p.chain}${p.genesis ? `, genesis ${p.genesis}` : ", the operator's own (no fixed genesis)"}`],
      ["proof of work", p.pow === "scrypt" ? "scrypt (N=1024, r=1, p=1)" : "double SHA-256"],
      ["least work per header", `target at most 0x${work.toString(16)}`],
      ["confirmations", `at least ${p.confirmations}`],
      ["window anchor", p.require_window ? "required" : "checked when present"],
      ["evidence", p.note || (p.independent ? "independent" : "not independent")],
    ];
    $("policy-facts").replaceChildren(
      ...facts.flatMap(([term, value]) => [el("dt", {}, term), el("dd", {}, value)])
    );
  }

  // -- files in --------------------------------------------------------------------------------

  async function setBundleFile(file) {
    const bytes = new Uint8Array(await file.arrayBuffer());
    state.bundle = { name: file.name, bytes };
    const about = V.summary(bytes);
    const text = about
      ? `${file.name}: the proof of a document with SHA-256 ${about.documentSha256.slice(0, 16)}…,` +
        ` in directory block ${about.height}.`
      : `${file.name} (${formatBytes(file.size)}).`;
    chosen("bundle", text);
    readPolicy();
    changed();
  }

  function setDocumentFile(file) {
    state.document = file;
    chosen("document", `${file.name} (${formatBytes(file.size)})`);
    changed();
  }

  function chosen(kind, text) {
    $(`${kind}-chosen`).textContent = text;
    $(`drop-${kind}`).classList.add("filled");
  }

  function changed() {
    $("verify-button").disabled = bundleInput() === null;
    if (bundleInput() !== null && (state.document || $("result").dataset.state !== "idle")) verifyNow();
  }

  /** Sort dropped files into the document and its bundle. */
  async function takeFiles(files, target) {
    const list = [...files];
    if (!list.length) return;
    if (state.embedded !== null || target === "document" && list.length === 1) {
      setDocumentFile(list[0]);
      return;
    }
    if (target === "bundle" && list.length === 1) {
      await setBundleFile(list[0]);
      return;
    }
    const kinds = await Promise.all(list.map(looksLikeBundle));
    const bundle = list.find((_, i) => kinds[i]);
    const document = list.find((_, i) => !kinds[i]);
    if (document) setDocumentFile(document);
    if (bundle) await setBundleFile(bundle);
  }

  async function looksLikeBundle(file) {
    if (file.name.endsWith(".proof.json")) return true;
    if (!file.name.endsWith(".json") || file.size > 16 * MIB) return false;
    return V.summary(new Uint8Array(await file.arrayBuffer())) !== null;
  }

  function wireDrops() {
    let depth = 0;
    doc.addEventListener("dragenter", (e) => {
      depth++;
      doc.body.classList.add("dragging");
      e.preventDefault();
    });
    doc.addEventListener("dragleave", () => {
      if (--depth <= 0) {
        depth = 0;
        doc.body.classList.remove("dragging");
      }
    });
    doc.addEventListener("dragover", (e) => e.preventDefault());
    doc.addEventListener("drop", (e) => {
      e.preventDefault();
      depth = 0;
      doc.body.classList.remove("dragging");
      const zone = e.target.closest && e.target.closest(".drop");
      for (const z of doc.querySelectorAll(".drop")) z.classList.remove("over");
      takeFiles(e.dataTransfer.files, zone ? zone.dataset.kind : null);
    });
    for (const zone of doc.querySelectorAll(".drop")) {
      zone.addEventListener("dragover", () => zone.classList.add("over"));
      zone.addEventListener("dragleave", () => zone.classList.remove("over"));
    }
    $("document-input").addEventListener("change", (e) => takeFiles(e.target.files, "document"));
    $("bundle-input").addEventListener("change", (e) => takeFiles(e.target.files, "bundle"));
  }

  function clearAll() {
    state.runId++;
    Object.assign(state, { document: null, digest: null, bundle: null, last: null });
    for (const kind of ["document", "bundle"]) {
      $(`${kind}-input`).value = "";
      $(`drop-${kind}`).classList.remove("filled");
    }
    $("document-chosen").textContent = "No file chosen. Without one, only the bundle is checked.";
    $("bundle-chosen").textContent = "No bundle chosen.";
    $("result").hidden = true;
    $("result").dataset.state = "idle";
    $("progress").hidden = true;
    $("verify-button").disabled = bundleInput() === null;
    $("inputs").focus();
  }

  function start() {
    const embedded = $("notary-embedded-bundle").textContent.trim();
    if (embedded && embedded !== "null") {
      state.embedded = embedded;
      $("drop-bundle").hidden = true;
      $("embedded").hidden = false;
      const about = V.summary(embedded);
      $("embedded-summary").textContent = about
        ? `The proof of a document with SHA-256 ${about.documentSha256}, recorded in directory` +
          ` block ${about.height}. Add the document to check it.`
        : "The bundle in this page cannot be read: Verify shows why.";
    }
    fillPolicies();
    readPolicy();
    wireDrops();
    $("tsa-trust-file").addEventListener("change", async (event) => {
      const [file] = event.target.files;
      if (!file) return;
      await Stamps.chooseTrustFile(file);
      if ($("result").dataset.state !== "idle") verifyNow();
    });
    $("policy-file").addEventListener("change", (event) => {
      const [file] = event.target.files;
      if (file) addPolicyFile(file);
    });
    $("policy-select").addEventListener("change", () => {
      readPolicy();
      if ($("result").dataset.state !== "idle") verifyNow();
    });
    $("verify-button").addEventListener("click", verifyNow);
    $("clear-button").addEventListener("click", clearAll);
    $("full-values").addEventListener("change", () => state.last && render(state.last, state.last.hashed, { focus: false }));
  }

  root.notaryPage = Object.freeze({
    hashFile,
    verifyNow,
    get last() {
      return state.last;
    },
  });
  start();
})(globalThis);
