// The only names the verification page takes from @noble/hashes (build.sh bundles this).
import { scrypt } from "@noble/hashes/scrypt.js";
import { sha256, sha512 } from "@noble/hashes/sha2.js";

globalThis.nobleHashes = Object.freeze({ scrypt, sha256, sha512 });
