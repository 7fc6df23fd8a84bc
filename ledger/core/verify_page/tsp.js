/*
 * RFC 3161 time-stamp tokens checked in the browser: the JavaScript twin of Python's
 * ledger/core/timestamps/rfc3161.py `verify_token` and tsa_chain.py, with the same
 * numbered checks, in the same order, and the same reasons where the two can say the same:
 *
 *  1 format             a CMS SignedData (RFC 5652 section 5) of content type id-ct-TSTInfo,
 *                       one signer, versions as RFC 5652 5.1 / 5.3 ask, strict DER throughout
 *  2 status             (responses only) granted or grantedWithMods (RFC 3161 2.4.2)
 *  3 imprint            the TSTInfo's message imprint is `digest` under the hash named
 *  5 signer             the signer's certificate is in the token and matches the ESS
 *                       signing-certificate attribute (RFC 2634 5.4 / RFC 5035)
 *  6 signed attributes  content type id-ct-TSTInfo; message digest = the TSTInfo's hash
 *  7 signature          the signer's key verifies the signed attributes (Web Crypto)
 *  8 key usage          extended key usage timeStamping, alone and critical (RFC 3161 2.3)
 *  9 chain              a path, each certificate valid at the token's genTime (never
 *                       today), to an anchor of the trust store the person chose; every
 *                       certificate the token carries is signed by an issuer at hand
 *
 * Check 4 (the nonce of a request) has no place offline. Revocation is not checked.
 * `verifyToken(token, {digest, hashName, trust})` resolves to the verdict {tsa, genTime,
 * serial, policy, trust, fingerprint, chain} or rejects with TimestampError {check, reason}.
 *
 * No DOM, no I/O. Exports globalThis.NotaryTsp; needs NotaryDer and NotaryX509.
 */
(function (root) {
  "use strict";

  const D = root.NotaryDer;
  const X = root.NotaryX509;
  const { TAG, DerError } = D;

  const CHECK_TITLES = Object.freeze({
    1: "format", 2: "status", 3: "imprint", 4: "nonce", 5: "signer",
    6: "signed attributes", 7: "signature", 8: "key usage", 9: "chain",
  });

  /** A token that does not prove its digest: `check` (1-9) and `reason`. */
  class TimestampError extends Error {
    constructor(check, reason) {
      super(`check ${check} (${CHECK_TITLES[check]}): ${reason}`);
      this.name = "TimestampError";
      this.check = check;
      this.reason = reason;
    }
  }

  const OID = Object.freeze({
    signedData: "1.2.840.113549.1.7.2",
    tstInfo: "1.2.840.113549.1.9.16.1.4",
    contentType: "1.2.840.113549.1.9.3",
    messageDigest: "1.2.840.113549.1.9.4",
    signingCertificate: "1.2.840.113549.1.9.16.2.12",
    signingCertificateV2: "1.2.840.113549.1.9.16.2.47",
    timeStamping: "1.3.6.1.5.5.7.3.8",
  });
  const MAX_PATH = 8;

  const formatError = (reason) => new TimestampError(1, reason);

  // -- check 1: format -----------------------------------------------------------------------

  /** A DER TimeStampResp -> its token (checks 1 and 2). */
  function tokenFromResponse(response) {
    let parts;
    try {
      parts = D.items(D.parse(response), "response", { min: 1, max: 2 });
      const status = D.smallInt(D.items(parts[0], "status", { min: 1 })[0], "status");
      if (status !== 0 && status !== 1) throw new TimestampError(2, `the authority answered status ${status}`);
    } catch (exc) {
      if (exc instanceof DerError) throw formatError(`the response does not parse: ${exc.message}`);
      throw exc;
    }
    if (parts.length < 2) throw formatError("a granted response without a token");
    return parts[1].der;
  }

  function openToken(token) {
    const [type, content] = D.items(D.parse(token), "token", { min: 2, max: 2 });
    if (D.oid(type) !== OID.signedData) throw formatError("the token is not a CMS SignedData");
    const signed = D.explicit(content, 0, "content");
    if (!signed) throw formatError("the token is not a CMS SignedData");
    const fields = D.items(signed, "SignedData", { min: 4 });
    const version = D.smallInt(fields[0], "version");
    const digestAlgs = D.items(fields[1], "digest algorithms", { tag: TAG.SET }).map((n) => X.algorithm(n, "digest algorithm").oid);
    const [eType, eContent] = D.items(fields[2], "encapsulated content", { min: 1, max: 2 });
    if (D.oid(eType) !== OID.tstInfo) throw formatError("the signed content is not a TSTInfo");
    const inner = eContent && D.explicit(eContent, 0, "content");
    if (!inner) throw formatError("the TSTInfo is missing");
    let at = 3;
    let certNodes = [];
    const certSet = fields[at] && fields[at].cls === 2 && fields[at].tag === 0 ? fields[at++] : null;
    if (certSet) certNodes = D.context(certSet, 0) ? certSet.children : [];
    if (fields[at] && fields[at].cls === 2 && fields[at].tag === 1) at++; // CRLs: not used
    if (at !== fields.length - 1) throw formatError("the SignedData has unexpected parts");
    const signers = D.items(fields[at], "signer infos", { tag: TAG.SET });
    if (signers.length !== 1) throw formatError("the token must have exactly one signer");
    const signer = parseSignerInfo(signers[0]);
    const wanted = signer.sid.kind === "issuerAndSerial" ? 1 : 3;
    if (version !== 3 || signer.version !== wanted) throw formatError("the SignedData or SignerInfo version is wrong");
    if (!digestAlgs.includes(signer.digestAlg.oid)) throw formatError("the signer's digest algorithm is not listed");
    const tstBytes = D.octets(inner, "TSTInfo");
    return { signer, tstBytes, tst: parseTstInfo(tstBytes), certNodes };
  }

  function parseSignerInfo(node) {
    const f = D.items(node, "SignerInfo", { min: 5, max: 7 });
    const version = D.smallInt(f[0], "SignerInfo version");
    let sid;
    if (f[1].cls === 0 && f[1].tag === TAG.SEQUENCE) {
      const [issuer, serial] = D.items(f[1], "signer identifier", { min: 2, max: 2 });
      X.parseName(issuer, "signer issuer");
      sid = { kind: "issuerAndSerial", issuer: issuer.der, serial: D.integer(serial) };
    } else if (D.context(f[1], 0, { constructed: false })) {
      sid = { kind: "keyId", keyId: f[1].body };
    } else throw formatError("the signer identifier is malformed");
    const digestAlg = X.algorithm(f[2], "digest algorithm");
    let at = 3;
    const signedAttrs = D.context(f[at], 0) ? f[at++] : null;
    const sigAlg = X.algorithm(f[at++], "signature algorithm");
    const signature = D.octets(f[at++], "signature");
    if (at < f.length && !D.context(f[at++], 1)) throw formatError("the SignerInfo has unexpected parts");
    if (at !== f.length) throw formatError("the SignerInfo has unexpected parts");
    const attributes = new Map();
    for (const attr of signedAttrs ? signedAttrs.children : []) {
      const [type, values] = D.items(attr, "attribute", { min: 2, max: 2 });
      const id = D.oid(type);
      if (attributes.has(id)) throw formatError(`attribute ${id} appears twice`);
      attributes.set(id, D.items(values, "attribute values", { min: 1, tag: TAG.SET }));
    }
    return { version, sid, digestAlg, signedAttrs, attributes, sigAlg, signature };
  }

  function parseTstInfo(bytes) {
    const f = D.items(D.parse(bytes), "TSTInfo", { min: 5 });
    if (D.smallInt(f[0], "TSTInfo version") !== 1) throw formatError("the TSTInfo version is not 1");
    const policy = D.oid(f[1], "policy");
    const [alg, hashed] = D.items(f[2], "message imprint", { min: 2, max: 2 });
    const serial = D.integer(f[3], "serial number");
    const genTime = D.time(f[4], "genTime");
    if (f[4].tag !== TAG.GENERALIZED_TIME) throw formatError("genTime is not a GeneralizedTime");
    return { policy, imprintAlg: X.algorithm(alg, "imprint algorithm").oid, imprint: D.octets(hashed), serial, genTime };
  }

  // -- checks 5-7 --------------------------------------------------------------------------------

  function certificates(nodes) {
    return nodes
      .filter((n) => n.cls === 0 && n.tag === TAG.SEQUENCE)
      .map((n) => {
        try {
          return X.parseCertificate(n.der);
        } catch (exc) {
          if (exc instanceof DerError) throw formatError("a certificate of the token does not parse");
          throw exc;
        }
      });
  }

  function identifies(sid, cert) {
    if (sid.kind === "issuerAndSerial") return sid.serial === cert.serial && D.equalBytes(sid.issuer, cert.issuer.der);
    const ski = X.subjectKeyId(cert);
    return ski !== null && D.equalBytes(ski, sid.keyId);
  }

  async function checkEss(signer, cert) {
    for (const id of [OID.signingCertificate, OID.signingCertificateV2]) {
      const values = signer.attributes.get(id);
      if (!values) continue;
      const [certIds] = D.items(values[0], "signing certificate", { min: 1 });
      const first = D.items(certIds, "certificate ids", { min: 1 })[0];
      const parts = D.items(first, "ESSCertID", { min: 1, max: 3 });
      let name = "sha1";
      let at = 0;
      if (id === OID.signingCertificateV2) {
        name = "sha256";
        if (parts[0].tag === TAG.SEQUENCE) name = X.DIGESTS[X.algorithm(parts[at++], "hash algorithm").oid] || "unknown";
      }
      const wanted = D.octets(parts[at], "certificate hash");
      const computed = await X.digest(name, cert.der);
      if (computed === null) throw new TimestampError(5, `unsupported hash ${name} in the signing-certificate attribute`);
      if (!D.equalBytes(wanted, computed)) {
        throw new TimestampError(5, "the signing-certificate attribute names another certificate");
      }
      return;
    }
    throw new TimestampError(5, "no signing-certificate attribute (RFC 3161 2.4.2)");
  }

  async function findSigner(signer, certs) {
    for (const cert of certs) {
      if (identifies(signer.sid, cert)) {
        await checkEss(signer, cert);
        return cert;
      }
    }
    throw new TimestampError(5, "the token does not hold its signer's certificate");
  }

  async function checkSignedAttributes(signer, tstBytes) {
    const type = signer.attributes.get(OID.contentType);
    if (!type || D.oid(type[0]) !== OID.tstInfo) throw new TimestampError(6, "the content-type attribute is not TSTInfo");
    const name = X.DIGESTS[signer.digestAlg.oid];
    const computed = name ? await X.digest(name, tstBytes) : null;
    if (computed === null) throw new TimestampError(6, `unsupported digest algorithm ${name || signer.digestAlg.oid}`);
    const stated = signer.attributes.get(OID.messageDigest);
    if (!stated || !D.equalBytes(D.octets(stated[0]), computed)) {
      throw new TimestampError(6, "the message-digest attribute is not the TSTInfo's hash");
    }
    return name;
  }

  async function checkSignature(signer, cert, digestName) {
    const signedBytes = Uint8Array.from(signer.signedAttrs.der);
    signedBytes[0] = 0x31; // the SET OF as signed (RFC 5652 section 5.4)
    const named = signer.sigAlg.oid;
    const hashOf = { "1.2.840.10045.4.3.2": "sha256", "1.2.840.10045.4.3.3": "sha384", "1.2.840.10045.4.3.4": "sha512",
      "1.2.840.113549.1.1.11": "sha256", "1.2.840.113549.1.1.12": "sha384", "1.2.840.113549.1.1.13": "sha512",
      "1.2.840.113549.1.1.5": "sha1", "1.2.840.10045.4.1": "sha1" }[named];
    if (hashOf && hashOf !== digestName) throw new TimestampError(7, "the signature algorithm names another digest");
    const ok = await X.verifySignature(signedBytes, { sigAlg: signer.sigAlg, signature: signer.signature, key: cert, digestName });
    if (!ok) throw new TimestampError(7, "the signature does not verify with the signer's key");
  }

  // -- checks 8-9 ---------------------------------------------------------------------------------

  function checkKeyUsage(cert) {
    const eku = X.extendedKeyUsage(cert);
    if (eku === null) throw new TimestampError(8, "the signer has no extended key usage");
    if (eku.usages.length !== 1 || eku.usages[0] !== OID.timeStamping) {
      throw new TimestampError(8, "the signer's key usage is not timeStamping only");
    }
    if (!eku.critical) throw new TimestampError(8, "the signer's timeStamping usage is not critical");
  }

  const day = (date) => date.toISOString().slice(0, 10);

  function checkValidity(cert, at) {
    if (!(cert.notBefore <= at && at <= cert.notAfter)) {
      throw new TimestampError(
        9,
        `${cert.subject.text} is valid ${day(cert.notBefore)} to ${day(cert.notAfter)}, not at the token's time ${day(at)}`
      );
    }
  }

  const isAnchor = (cert, trust) => trust.anchors.some((a) => D.equalBytes(a.der, cert.der));

  async function pathToAnchor(signer, certs, trust, at) {
    const path = [signer];
    const pool = [...trust.anchors, ...certs];
    for (;;) {
      const current = path[path.length - 1];
      checkValidity(current, at);
      if (isAnchor(current, trust)) return path;
      if (path.length >= MAX_PATH) throw new TimestampError(9, `no anchor within ${MAX_PATH} certificates`);
      let issuer = null;
      for (const candidate of pool) {
        if (candidate.subject.key !== current.issuer.key || path.some((s) => D.equalBytes(s.der, candidate.der))) continue;
        if (X.isCa(candidate) && (await X.signedBy(current, candidate))) {
          issuer = candidate;
          break;
        }
      }
      if (issuer === null) {
        const name = current.subject.text;
        throw new TimestampError(
          9,
          current.subject.key === current.issuer.key
            ? `the path ends at ${name}, which the trust store '${trust.name}' lacks`
            : `${name} is not issued by a certificate of the trust store '${trust.name}'`
        );
      }
      path.push(issuer);
    }
  }

  async function checkCarried(certs, trust) {
    const pool = [...trust.anchors, ...certs];
    for (const cert of certs) {
      if (isAnchor(cert, trust)) continue;
      const named = pool.filter((c) => c.subject.key === cert.issuer.key && c !== cert);
      if (cert.subject.key === cert.issuer.key) named.push(cert);
      let ok = false;
      for (const issuer of named) if (!ok) ok = await X.signedBy(cert, issuer);
      if (!ok) {
        throw new TimestampError(9, `the token's certificate ${cert.subject.text} is not signed by an issuer at hand`);
      }
    }
  }

  // -- the check ---------------------------------------------------------------------------------

  /**
   * Verify a DER token (Uint8Array) over `digest` (Uint8Array) offline.
   *
   * @param options.digest the stamped digest (for a bundle: the 32-byte KeyMR).
   * @param options.hashName its hash ("sha256", "sha384", "sha512", "sha1").
   * @param options.trust a trust store (NotaryX509.readTrustStore): required.
   * @returns Promise of {tsa, genTime (ISO text), genDate (Date), serial (decimal text),
   *     policy, trust (its name), fingerprint, chain (subjects, signer first), revocation}.
   * @throws TimestampError naming the first check that fails.
   */
  async function verifyToken(token, { digest, hashName = "sha256", trust }) {
    if (!trust) throw new TypeError("verifyToken needs a trust store");
    try {
      return await verify(token, digest, hashName, trust);
    } catch (exc) {
      // As Python's verify_token: anything else a malformed part raises is check 1.
      if (exc instanceof TimestampError) throw exc;
      throw formatError(`a part of the token is malformed (${exc.message})`);
    }
  }

  async function verify(token, digest, hashName, trust) {
    const { signer, tstBytes, tst, certNodes } = openToken(token);
    const certs = certificates(certNodes); // check 1 reads every part, as Python's parse does
    const named = X.DIGESTS[tst.imprintAlg] || tst.imprintAlg;
    if (named !== hashName) throw new TimestampError(3, `the token stamps a ${named} digest, not ${hashName}`);
    if (!D.equalBytes(tst.imprint, digest)) {
      throw new TimestampError(3, `the token stamps ${X.toHex(tst.imprint)}, not ${X.toHex(digest)}`);
    }
    const cert = await findSigner(signer, certs);
    const digestName = await checkSignedAttributes(signer, tstBytes);
    await checkSignature(signer, cert, digestName);
    checkKeyUsage(cert);
    const path = await pathToAnchor(cert, certs, trust, tst.genTime.date);
    await checkCarried(certs, trust);
    return Object.freeze({
      tsa: cert.subject.text,
      genTime: tst.genTime.text,
      genDate: tst.genTime.date,
      serial: tst.serial.toString(),
      policy: tst.policy,
      trust: trust.name,
      fingerprint: trust.fingerprint,
      chain: path.map((c) => c.subject.text),
      revocation: "not checked",
    });
  }

  root.NotaryTsp = Object.freeze({ CHECK_TITLES, TimestampError, tokenFromResponse, verifyToken });
})(globalThis);
