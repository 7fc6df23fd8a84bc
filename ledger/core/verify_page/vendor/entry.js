// The only names the verification page takes from @noble/hashes (build.sh bundles this).
import { sha256, sha512 } from "@noble/hashes/sha2.js";

globalThis.nobleHashes = Object.freeze({ sha256, sha512 });
