#!/usr/bin/env bash
# Rebuild noble-hashes.min.js, the SHA-256/SHA-512/scrypt code inlined into the verification page.
#
# The install never runs this (CI has only Python and pip): the built file is committed.
# Run it by hand after changing the versions pinned in package.json / package-lock.json:
#
#     bash ledger/core/verify_page/vendor/build.sh
#
# Needs node and npm. The build happens in a temporary folder, so no node_modules is left
# in the tree; the output is one IIFE that defines globalThis.nobleHashes = {keccak_256, ripemd160, scrypt, sha1, sha256, sha512},
# minified, headed by the library's licence.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$here/package.json" "$here/entry.js" "$work/"
[ -f "$here/package-lock.json" ] && cp "$here/package-lock.json" "$work/"
cd "$work"
if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --silent; else npm install --no-audit --no-fund --silent; fi
cp package-lock.json "$here/package-lock.json"
version="$(node -p 'JSON.parse(require("fs").readFileSync("node_modules/@noble/hashes/package.json")).version')"
npx esbuild entry.js --bundle --minify --format=iife --target=es2020 --legal-comments=none \
    --outfile=bundle.js --log-level=warning
{
    printf '/*! @noble/hashes %s (sha2.js: sha256, sha512; scrypt.js: scrypt; legacy.js: sha1, ripemd160; sha3.js: keccak_256), bundled by build.sh with esbuild.\n' "$version"
    sed 's/^/ * /; s/ *$//' node_modules/@noble/hashes/LICENSE
    printf ' */\n'
    cat bundle.js
} > "$here/noble-hashes.min.js"
echo "wrote $here/noble-hashes.min.js ($(wc -c < "$here/noble-hashes.min.js") bytes)"
