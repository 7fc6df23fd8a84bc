/*
 * X.509 certificates (RFC 5280) as the page's RFC 3161 check needs them: read with the
 * strict DER reader (der.js), signatures checked by the browser's Web Crypto.
 *
 * `parseCertificate(der)` -> {der, tbs, sigAlg, signature, serial, issuer, subject,
 * notBefore, notAfter, spki, extensions}; names are {der, text (RFC 4514, as Python's
 * `cryptography` writes it: last RDN first), key (equality: attribute types and values)}.
 * `verifySignature(data, {sigAlg, signature, key, digest})` -> Promise<boolean>: RSA
 * PKCS #1 v1.5, RSA-PSS and ECDSA (P-256, P-384, P-521) with SHA-1/256/384/512.
 * `readTrustStore(bytes, name)` reads the trust store a person chooses (PEM, one or more
 * certificates, or one DER certificate).
 *
 * Pure but for Web Crypto: no DOM, no I/O. Exports globalThis.NotaryX509; needs NotaryDer.
 */
(function (root) {
  "use strict";

  const D = root.NotaryDer;
  const { TAG, DerError } = D;

  const DIGESTS = Object.freeze({
    "1.3.14.3.2.26": "sha1",
    "2.16.840.1.101.3.4.2.4": "sha224",
    "2.16.840.1.101.3.4.2.1": "sha256",
    "2.16.840.1.101.3.4.2.2": "sha384",
    "2.16.840.1.101.3.4.2.3": "sha512",
  });
  const SUBTLE_HASH = Object.freeze({ sha1: "SHA-1", sha256: "SHA-256", sha384: "SHA-384", sha512: "SHA-512" });
  const DIGEST_BYTES = Object.freeze({ sha1: 20, sha224: 28, sha256: 32, sha384: 48, sha512: 64 });

  /** Signature algorithm OID -> [kind, hash named (null: the CMS digest's)]. */
  const SIGNATURES = Object.freeze({
    "1.2.840.113549.1.1.1": ["rsa", null],
    "1.2.840.113549.1.1.5": ["rsa", "sha1"],
    "1.2.840.113549.1.1.14": ["rsa", "sha224"],
    "1.2.840.113549.1.1.11": ["rsa", "sha256"],
    "1.2.840.113549.1.1.12": ["rsa", "sha384"],
    "1.2.840.113549.1.1.13": ["rsa", "sha512"],
    "1.2.840.113549.1.1.10": ["pss", null],
    "1.2.840.10045.4.1": ["ecdsa", "sha1"],
    "1.2.840.10045.4.3.1": ["ecdsa", "sha224"],
    "1.2.840.10045.4.3.2": ["ecdsa", "sha256"],
    "1.2.840.10045.4.3.3": ["ecdsa", "sha384"],
    "1.2.840.10045.4.3.4": ["ecdsa", "sha512"],
  });
  const CURVES = Object.freeze({
    "1.2.840.10045.3.1.7": ["P-256", 32],
    "1.3.132.0.34": ["P-384", 48],
    "1.3.132.0.35": ["P-521", 66],
  });
  const KEY_RSA = "1.2.840.113549.1.1.1";
  const KEY_EC = "1.2.840.10045.2.1";

  /** Attribute type OID -> the short name `cryptography`'s rfc4514_string uses. */
  const SHORT_NAMES = Object.freeze({
    "2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.9": "STREET",
    "2.5.4.10": "O", "2.5.4.11": "OU", "0.9.2342.19200300.100.1.1": "UID",
    "0.9.2342.19200300.100.1.25": "DC",
  });

  /** A digest by name (hex-free bytes in, bytes out); null for one the browser lacks. */
  async function digest(name, data) {
    const subtle = SUBTLE_HASH[name];
    if (!subtle) return null;
    return new Uint8Array(await root.crypto.subtle.digest(subtle, data));
  }

  /** AlgorithmIdentifier -> {oid, params (node or null)}. */
  function algorithm(node, what) {
    const [id, params = null] = D.items(node, what, { min: 1, max: 2 });
    return { oid: D.oid(id, what), params };
  }

  // -- names -----------------------------------------------------------------------------

  function escapeValue(value) {
    if (!value) return "";
    let v = value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\+/g, "\\+").replace(/,/g, "\\,");
    v = v.replace(/;/g, "\\;").replace(/</g, "\\<").replace(/>/g, "\\>").replace(/\0/g, "\\00");
    if (v[0] === "#" || v[0] === " ") v = "\\" + v;
    if (v.endsWith(" ")) v = v.slice(0, -1) + "\\ ";
    return v;
  }

  /** A Name (RDNSequence) -> {der, text, key}. */
  function parseName(node, what = "name") {
    const rdns = D.items(node, what).map((set) =>
      D.items(set, what, { min: 1, tag: TAG.SET }).map((atv) => {
        const [type, value] = D.items(atv, what, { min: 2, max: 2 });
        const text = D.string(value);
        return { oid: D.oid(type, what), value: text === null ? "#" + toHex(value.der) : text, raw: text === null };
      })
    );
    const text = [...rdns]
      .reverse()
      .map((rdn) => rdn.map((a) => `${SHORT_NAMES[a.oid] || a.oid}=${a.raw ? a.value : escapeValue(a.value)}`).join("+"))
      .join(",");
    const key = JSON.stringify(rdns.map((rdn) => rdn.map((a) => [a.oid, a.value])));
    return { der: node.der, text, key };
  }

  const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

  // -- certificates ------------------------------------------------------------------------

  function parseExtensions(node) {
    const found = new Map();
    for (const ext of D.items(node, "extensions", { min: 1 })) {
      const parts = D.items(ext, "extension", { min: 2, max: 3 });
      const id = D.oid(parts[0], "extension id");
      const critical = parts.length === 3 ? D.boolean(parts[1], "extension critical flag") : false;
      if (found.has(id)) throw new DerError(`extension ${id} appears twice`);
      found.set(id, { critical, value: D.octets(parts[parts.length - 1], "extension value") });
    }
    return found;
  }

  /**
   * A DER certificate (Uint8Array) -> its parts (module comment). Throws DerError.
   */
  function parseCertificate(der) {
    const top = D.parse(der);
    const [tbsNode, sigAlgNode, sigNode] = D.items(top, "certificate", { min: 3, max: 3 });
    const tbs = D.items(tbsNode, "tbsCertificate", { min: 6 });
    let at = 0;
    const versionNode = D.explicit(tbs[0], 0, "version");
    if (versionNode) at++;
    const version = versionNode ? D.smallInt(versionNode, "version") : 0;
    const serial = D.integer(tbs[at++], "serial number");
    const innerAlg = algorithm(tbs[at++], "signature algorithm");
    const issuer = parseName(tbs[at++], "issuer");
    const [nb, na] = D.items(tbs[at++], "validity", { min: 2, max: 2 });
    const subject = parseName(tbs[at++], "subject");
    const spkiNode = tbs[at++];
    const [keyAlgNode, keyBits] = D.items(spkiNode, "subjectPublicKeyInfo", { min: 2, max: 2 });
    const keyAlg = algorithm(keyAlgNode, "key algorithm");
    D.expect(keyBits, TAG.BIT_STRING, "public key");
    let extensions = new Map();
    for (; at < tbs.length; at++) {
      const ext = D.explicit(tbs[at], 3, "extensions");
      if (ext) extensions = parseExtensions(ext);
    }
    const sigAlg = algorithm(sigAlgNode, "signature algorithm");
    if (sigAlg.oid !== innerAlg.oid) throw new DerError("the certificate names two signature algorithms");
    return {
      der,
      tbs: tbsNode.der,
      version,
      serial,
      sigAlg,
      signature: D.bits(sigNode, "signature"),
      issuer,
      subject,
      notBefore: D.time(nb, "notBefore").date,
      notAfter: D.time(na, "notAfter").date,
      spki: spkiNode.der,
      keyAlg,
      extensions,
    };
  }

  /** BasicConstraints cA (false when the extension is absent). */
  function isCa(cert) {
    const ext = cert.extensions.get("2.5.29.19");
    if (!ext) return false;
    const parts = D.items(D.parse(ext.value), "basic constraints", { max: 2 });
    return parts.length > 0 && parts[0].tag === TAG.BOOLEAN && D.boolean(parts[0]);
  }

  /** The extended key usage: {critical, usages: [dotted OIDs]} or null. */
  function extendedKeyUsage(cert) {
    const ext = cert.extensions.get("2.5.29.37");
    if (!ext) return null;
    const usages = D.items(D.parse(ext.value), "extended key usage", { min: 1 }).map((n) => D.oid(n));
    return { critical: ext.critical, usages };
  }

  /** The subject key identifier (bytes) or null. */
  function subjectKeyId(cert) {
    const ext = cert.extensions.get("2.5.29.14");
    return ext ? D.octets(D.parse(ext.value), "subject key identifier") : null;
  }

  // -- signatures --------------------------------------------------------------------------

  /** ECDSA-Sig-Value (DER) -> r || s, each `size` bytes (Web Crypto's form); null if bad. */
  function rawEcdsa(signature, size) {
    try {
      const parts = D.items(D.parse(signature), "ECDSA signature", { min: 2, max: 2 });
      const out = new Uint8Array(2 * size);
      for (const [i, node] of parts.entries()) {
        const value = D.integer(node);
        if (value <= 0n) return null;
        const hex = value.toString(16).padStart(2 * size, "0");
        if (hex.length > 2 * size) return null;
        for (let j = 0; j < size; j++) out[i * size + j] = parseInt(hex.slice(2 * j, 2 * j + 2), 16);
      }
      return out;
    } catch (exc) {
      if (exc instanceof DerError) return null;
      throw exc;
    }
  }

  function pssParams(params) {
    let hash = "sha1";
    let salt = 20;
    for (const field of params ? D.items(params, "RSA-PSS parameters", { max: 4 }) : []) {
      if (field.cls !== 2 || !field.constructed) throw new DerError("RSA-PSS parameters are malformed");
      const inner = field.children[0];
      if (field.tag === 0) hash = DIGESTS[algorithm(inner, "PSS hash").oid] || "unknown";
      else if (field.tag === 2) salt = D.smallInt(inner, "PSS salt length");
    }
    return { hash, salt };
  }

  /**
   * Whether `signature` over `data` verifies with `key` (a certificate's parsed
   * subjectPublicKeyInfo: {spki, keyAlg}) under `sigAlg` ({oid, params}).
   *
   * @param digestName the hash for a bare `rsaEncryption` algorithm (CMS signers); null
   *     for certificates.
   * @returns Promise<boolean>; false for an algorithm, key or curve the page cannot use.
   */
  async function verifySignature(data, { sigAlg, signature, key, digestName = null }) {
    const known = SIGNATURES[sigAlg.oid];
    if (!known) return false;
    const [kind, named] = known;
    const subtle = root.crypto.subtle;
    try {
      if (kind === "ecdsa") {
        if (key.keyAlg.oid !== KEY_EC || !key.keyAlg.params) return false;
        const curve = CURVES[D.oid(key.keyAlg.params, "curve")];
        const raw = curve && SUBTLE_HASH[named] ? rawEcdsa(signature, curve[1]) : null;
        if (raw === null) return false;
        const imported = await subtle.importKey("spki", key.spki, { name: "ECDSA", namedCurve: curve[0] }, false, ["verify"]);
        return await subtle.verify({ name: "ECDSA", hash: SUBTLE_HASH[named] }, imported, raw, data);
      }
      if (key.keyAlg.oid !== KEY_RSA) return false;
      if (kind === "pss") {
        const { hash, salt } = pssParams(sigAlg.params);
        if (!SUBTLE_HASH[hash]) return false;
        const imported = await subtle.importKey("spki", key.spki, { name: "RSA-PSS", hash: SUBTLE_HASH[hash] }, false, ["verify"]);
        return await subtle.verify({ name: "RSA-PSS", saltLength: salt }, imported, signature, data);
      }
      const hash = SUBTLE_HASH[named || digestName];
      if (!hash) return false;
      const imported = await subtle.importKey("spki", key.spki, { name: "RSASSA-PKCS1-v1_5", hash }, false, ["verify"]);
      return await subtle.verify({ name: "RSASSA-PKCS1-v1_5" }, imported, signature, data);
    } catch (exc) {
      if (exc instanceof DerError || (exc && (exc.name === "DataError" || exc.name === "NotSupportedError"))) return false;
      throw exc;
    }
  }

  /** Whether `cert` carries a valid signature by `issuer`'s key (names not compared). */
  const signedBy = (cert, issuer) =>
    verifySignature(cert.tbs, { sigAlg: cert.sigAlg, signature: cert.signature, key: issuer });

  // -- trust stores ---------------------------------------------------------------------------

  const PEM_BLOCK = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]*?)-----END CERTIFICATE-----/g;

  /**
   * A trust store from a chosen file: {name, fingerprint (SHA-256 of the file, hex),
   * anchors (parsed certificates)}.
   *
   * @throws DerError when the file holds no certificate or one that does not parse.
   */
  async function readTrustStore(bytes, name) {
    const text = new TextDecoder("latin1").decode(bytes);
    const blocks = [...text.matchAll(PEM_BLOCK)].map((m) => base64Bytes(m[1].replace(/\s+/g, "")));
    const ders = blocks.length ? blocks : text.includes("-----BEGIN") ? [] : [bytes];
    if (!ders.length) throw new DerError("the file holds no certificate");
    const anchors = ders.map((der, i) => {
      try {
        return parseCertificate(der);
      } catch (exc) {
        if (exc instanceof DerError) throw new DerError(`certificate ${i + 1} does not parse: ${exc.message}`);
        throw exc;
      }
    });
    return Object.freeze({ name, fingerprint: toHex(await digest("sha256", bytes)), anchors });
  }

  /** Strict base64 (padding required, no stray characters) -> bytes; throws DerError. */
  function base64Bytes(text) {
    if (text.length % 4 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) throw new DerError("not base64");
    let binary;
    try {
      binary = root.atob(text);
    } catch (exc) {
      throw new DerError("not base64");
    }
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  }

  root.NotaryX509 = Object.freeze({
    DIGESTS,
    DIGEST_BYTES,
    algorithm,
    base64Bytes,
    digest,
    extendedKeyUsage,
    isCa,
    parseCertificate,
    parseName,
    readTrustStore,
    signedBy,
    subjectKeyId,
    toHex,
    verifySignature,
  });
})(globalThis);
