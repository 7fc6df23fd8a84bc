// The only names the verification page takes from @noble/hashes (build.sh bundles this).
import { ripemd160, sha1 } from "@noble/hashes/legacy.js";
import { scrypt } from "@noble/hashes/scrypt.js";
import { sha256, sha512 } from "@noble/hashes/sha2.js";
import { keccak_256 } from "@noble/hashes/sha3.js";

globalThis.nobleHashes = Object.freeze({ keccak_256, ripemd160, scrypt, sha1, sha256, sha512 });
